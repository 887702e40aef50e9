import Testing

// The suites that must not share the machine's cores or the process with other tests, in four
// groups. Each group runs its suites one test at a time; `scripts/test.sh` runs each group in a
// process of its own, before the rest of the suite (docs/performance.md#the-test-suite). Under
// a plain `swift test` the groups run beside the other suites, one test at a time within each.

/// Work held to a deadline or to a bound on real time, which needs the cores: the time
/// contract, healthy hosts beside a dead one, the transfer pace's connection counts, an avatar's
/// timeout, the device's peak memory while it decrypts, and a campaign's cut clip across
/// replicas by a 4-s deadline.
// Serialized: another test's decodes on the same cores would make these late.
@Suite(.serialized) enum DeadlineBoundSuites {}

/// Timers that mostly wait: stalling origins, the service's connection timers, retention and
/// drains.
// Serialized: each times a timer, which other tests' work on the same cores would delay.
@Suite(.serialized) enum TimerBoundSuites {}

/// The object store's suites, which mostly wait too: its retries, a killed replica's lease,
/// encrypted publishing to it. Apart from `TimerBoundSuites` so that the two run side by side;
/// each suite starts a SeaweedFS of its own (`.sharedSeaweedStore`).
// Serialized: each times a timer, which other tests' work on the same cores would delay.
@Suite(.serialized) enum ObjectStoreBoundSuites {}

/// Suites that read what belongs to the whole test process: its decoder worker processes, or
/// libvips' process-wide error text.
// Serialized: another test's workers or libvips errors would be counted as theirs.
@Suite(.serialized) enum ProcessWideSuites {}
