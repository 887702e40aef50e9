import Testing

/// The service's suites that time a timer (connection timers, retention, drains, a launched
/// service's start): one test at a time, in a process of their own under `scripts/test.sh`
/// (after `TimerBoundSuites`, docs/performance.md#the-test-suite). Its name does not contain
/// that group's, so that neither group's filter selects the other.
// Serialized: each times a timer, which other tests' work on the same cores would delay.
@Suite(.serialized) enum ServiceTimerSuites {}
