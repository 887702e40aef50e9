import Synchronization

/// The result cache's clock: the pipeline's clock type, by the name it had first.
public typealias CacheClock = AttachFetchClock

/// Where the pipeline reads the time from for what it decides by elapsed time itself: cache
/// freshness (`ResultCaching.clock`) and circuit-breaker cool-downs
/// (`AttachFetchConfiguration.clock`). The system's monotonic clock by default. A test (or a
/// program that simulates time) gives its own, so that a result goes stale or a cool-down
/// ends without anyone sleeping. Two clocks are equal when they are the same clock.
public struct AttachFetchClock: Sendable, Equatable {
    private let read: @Sendable () -> ContinuousClock.Instant
    private let identity: Int
    private static let made = Atomic<Int>(0)

    /// A clock that reads `now` (called under the cache's and the transfer queue's locks: it
    /// must be quick and make no system call beyond reading a clock).
    public init(_ now: @escaping @Sendable () -> ContinuousClock.Instant) {
        read = now
        identity = Self.made.add(1, ordering: .relaxed).newValue
    }

    /// The system's monotonic clock.
    public static let system = AttachFetchClock { .now }

    /// The time now, by this clock.
    public var now: ContinuousClock.Instant { read() }

    /// The same clock.
    public static func == (a: AttachFetchClock, b: AttachFetchClock) -> Bool { a.identity == b.identity }
}
