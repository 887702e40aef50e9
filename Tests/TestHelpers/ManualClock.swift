import AttachFetchCore
import Foundation
import Synchronization
import Testing

/// A clock that moves only when a test moves it. Batch deadlines, cache freshness, leases and
/// breaker cool-downs read it (`AttachFetchConfiguration.clock`), so that a test advances it
/// where time is the subject instead of sleeping. It starts at the real time it was made.
public final class ManualClock: Sendable {
    private struct State {
        var offset: Duration = .zero
        var sleepers: [UInt64: (until: ContinuousClock.Instant, wake: CheckedContinuation<Void, any Error>)] = [:]
        var next: UInt64 = 0
    }
    private let origin = ContinuousClock.now
    private let state = Locked(State())
    /// The pipeline's view of this clock (one clock: made once).
    public let clock: AttachFetchClock

    public init() {
        let origin = self.origin, state = self.state
        let now: @Sendable () -> ContinuousClock.Instant = { origin + state.withLock { $0.offset } }
        clock = AttachFetchClock(now: now, sleepUntil: { until in
            let id = state.withLock { state in state.next += 1; return state.next }
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (wake: CheckedContinuation<Void, any Error>) in
                    // Like Task.sleep: a task already cancelled throws, one already past `until` returns.
                    enum Now { case due, cancelled, sleeping }
                    let now = state.withLock { state -> Now in
                        if Task.isCancelled { return .cancelled }
                        if origin + state.offset >= until { return .due }
                        state.sleepers[id] = (until, wake)
                        return .sleeping
                    }
                    switch now {
                    case .due: wake.resume()
                    case .cancelled: wake.resume(throwing: CancellationError())
                    case .sleeping: break
                    }
                }
            } onCancel: {
                state.withLock { $0.sleepers.removeValue(forKey: id) }?.wake.resume(throwing: CancellationError())
            }
        })
    }

    /// The time now, by this clock.
    public var now: ContinuousClock.Instant { clock.now }

    /// Moves the clock on, waking whoever sleeps until then.
    public func advance(by duration: Duration) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.offset += duration
            let now = origin + state.offset
            let due = state.sleepers.filter { $0.value.until <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.map(\.value.wake)
        }
        for wake in woken { wake.resume() }
    }

    /// Sleepers waiting on this clock now: a test advances once the deadline sentinel waits.
    public var sleeping: Int { state.withLock { $0.sleepers.count } }
}
