import Synchronization

/// Where the result cache reads the time from to decide freshness: the system's monotonic
/// clock by default. A test (or a program that simulates time) gives its own, so that a result
/// goes stale without anyone sleeping. Two clocks are equal when they are the same clock.
public struct CacheClock: Sendable, Equatable {
    private let read: @Sendable () -> ContinuousClock.Instant
    private let identity: Int
    private static let made = Atomic<Int>(0)

    /// A clock that reads `now` (called under the cache's lock: it must be quick and make no
    /// system call beyond reading a clock).
    public init(_ now: @escaping @Sendable () -> ContinuousClock.Instant) {
        read = now
        identity = Self.made.add(1, ordering: .relaxed).newValue
    }

    /// The system's monotonic clock.
    public static let system = CacheClock { .now }

    /// The time now, by this clock.
    public var now: ContinuousClock.Instant { read() }

    /// The same clock.
    public static func == (a: CacheClock, b: CacheClock) -> Bool { a.identity == b.identity }
}
