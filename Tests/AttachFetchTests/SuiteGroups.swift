import Testing

// The suites that must not share the machine's cores or the process with other tests, in three
// groups. Each group runs its suites one test at a time; `scripts/test.sh` runs each group in a
// process of its own, before the rest of the suite (docs/performance.md#the-test-suite). Under
// a plain `swift test` the groups run beside the other suites, one test at a time within each.

/// Work held to a deadline or to a bound on real time, which needs the cores: the time
/// contract, healthy hosts beside a dead one, the transfer pace's connection counts, an avatar's
/// timeout, and the device's peak memory while it decrypts.
// Serialized: another test's decodes on the same cores would make these late.
@Suite(.serialized) enum DeadlineBoundSuites {}

/// Timers that mostly wait: stalling origins, the service's connection timers, retention and
/// drains, the object store's retries, a killed replica's lease.
// Serialized: each times a timer, which other tests' work on the same cores would delay.
@Suite(.serialized) enum TimerBoundSuites {}

/// Suites that read what belongs to the whole test process: its decoder worker processes, or
/// libvips' process-wide error text.
// Serialized: another test's workers or libvips errors would be counted as theirs.
@Suite(.serialized) enum ProcessWideSuites {}
