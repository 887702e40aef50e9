import Testing

// The suites that must not share the machine's cores or the process with other tests, in five
// groups. Each group runs its suites one test at a time; `scripts/test.sh` runs each group in a
// process of its own, before the rest of the suite (docs/performance.md#the-test-suite). Under
// a plain `swift test` the groups run beside the other suites, one test at a time within each.

/// Work held to a deadline or to a bound on real time, which needs the cores: the transfer
/// pace's connection counts, an avatar's timeout, thumbnails and transcodes by their budgets,
/// the device's peak memory while it decrypts, and a campaign's cut clip across replicas by a
/// 4-s deadline.
// Serialized: another test's decodes on the same cores would make these late.
@Suite(.serialized) enum DeadlineBoundSuites {}

/// Deadlines and bounds on real time over work that mostly waits on stalled or slow origins:
/// the time contract (batches against their deadlines), healthy hosts beside a dead one, one
/// download for a thousand callers. They use a fifth of a core or less (1.3, 1.4 and 0.9
/// CPU-seconds in 7.4, 4.8 and 4.2 s alone), and the work they hold to a bound is small (a
/// photo and a tone by a 1-s deadline), so they run beside `DeadlineBoundSuites`, in a process
/// of their own.
// Serialized: each times a batch or a wait, which a second test of its own would delay.
@Suite(.serialized) enum DeadlineWaitSuites {}

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
