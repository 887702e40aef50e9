#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// The result cache's clock: the pipeline's clock type, by the name it had first.
public typealias CacheClock = AttachFetchClock

/// Where the pipeline reads the time from for everything it decides by elapsed time itself:
/// batch deadlines (and so the deadline it enforces on queued transfers, Retry-After waits and
/// object-store requests), cache freshness, lease expiry and circuit-breaker cool-downs
/// (`AttachFetchConfiguration.clock`). The system's monotonic clock by default. A test (or a
/// program that simulates time) gives its own, so that a deadline passes, a result goes stale,
/// a lease expires or a cool-down ends without anyone sleeping. libcurl's own timeouts
/// (connect, request, stall) are durations handed to libcurl and stay real time; descriptor
/// timings are measured in real time too. Two clocks are equal when they are the same clock.
public struct AttachFetchClock: Sendable, Equatable {
    private let read: @Sendable () -> ContinuousClock.Instant
    private let sleeper: (@Sendable (ContinuousClock.Instant) async throws -> Void)?
    private let identity: Int
    private static let made = Atomic<Int>(0)

    /// A clock that reads `now` (called under the cache's and the transfer queue's locks: it
    /// must be quick and make no system call beyond reading a clock). Waiting on it sleeps for
    /// what is left by this clock, in real time, and reads it again.
    public init(_ now: @escaping @Sendable () -> ContinuousClock.Instant) {
        read = now
        sleeper = nil
        identity = Self.made.add(1, ordering: .relaxed).newValue
    }

    /// A clock that reads `now` and waits with `sleepUntil`, which returns once this clock
    /// reads the instant given or later (and throws `CancellationError` when its task is
    /// cancelled first). The deadline sentinel of every batch waits this way.
    public init(now: @escaping @Sendable () -> ContinuousClock.Instant,
                sleepUntil: @escaping @Sendable (ContinuousClock.Instant) async throws -> Void) {
        read = now
        sleeper = sleepUntil
        identity = Self.made.add(1, ordering: .relaxed).newValue
    }

    /// The system's monotonic clock. Its sleeps give their timer back when cancelled
    /// (`TimerSleep`): a cancelled deadline sentinel then costs nothing until its deadline.
    public static let system = AttachFetchClock(now: { .now }, sleepUntil: { try await TimerSleep.until($0) })

    /// The time now, by this clock.
    public var now: ContinuousClock.Instant { read() }

    /// Seconds since 1970 by this clock: the wall time moved as far as this clock has moved
    /// from the system's monotonic one. For what replicas share (leases, stored freshness),
    /// which only wall time can carry between machines.
    public var wallSeconds: Double {
        let drift = self == .system ? .zero : read() - .now
        return Date().timeIntervalSince1970 + drift.seconds
    }

    /// Returns once this clock reads `instant` or later; throws when the task is cancelled.
    public func sleep(until instant: ContinuousClock.Instant) async throws {
        if let sleeper { return try await sleeper(instant) }
        while true {
            let left = instant - read()
            if left <= .zero { return }
            try await Task.sleep(for: left)
        }
    }

    /// The same clock.
    public static func == (a: AttachFetchClock, b: AttachFetchClock) -> Bool { a.identity == b.identity }
}
