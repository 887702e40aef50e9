import Dispatch

/// A sleep whose timer goes when its task is cancelled. `Task.sleep` on Linux leaves its timer
/// (and about 700 bytes of task, timer and continuation) in place until the instant comes, even
/// once cancelled: every batch's and every shared work's deadline sentinel is cancelled when
/// the work ends first, so a long batch kept one per attachment until its deadline.
enum TimerSleep {
    private static let queue = DispatchQueue(label: "af-timer-sleep")

    private enum State {
        case arming
        case armed(CheckedContinuation<Void, any Error>)
        case cancelledEarly
        case done
    }

    /// Returns at `instant` (by `ContinuousClock`, measured as time left from now); throws
    /// `CancellationError` at once when the task is cancelled first, the timer cancelled too.
    static func until(_ instant: ContinuousClock.Instant) async throws {
        let left = instant - .now
        guard left > .zero else { return }
        try Task.checkCancellation()
        let nanoseconds = Int(left.components.seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let delay = nanoseconds.overflow ? Int.max / 2 : nanoseconds.partialValue &+ Int(left.components.attoseconds / 1_000_000_000)
        let timer = Timer(DispatchSource.makeTimerSource(queue: queue))
        let state = Locked(State.arming)
        /// Takes the continuation once, whoever comes first: the timer or the cancellation.
        @Sendable func take() -> CheckedContinuation<Void, any Error>? {
            state.withLock { state in
                switch state {
                case .armed(let continuation):
                    state = .done
                    return continuation
                case .arming:
                    state = .cancelledEarly
                    return nil
                case .cancelledEarly, .done:
                    return nil
                }
            }
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let early = state.withLock { state -> Bool in
                    if case .cancelledEarly = state { return true }
                    state = .armed(continuation)
                    return false
                }
                if early { return continuation.resume(throwing: CancellationError()) }
                timer.source.setEventHandler {
                    timer.source.cancel()
                    take()?.resume()
                }
                timer.source.schedule(deadline: .now() + .nanoseconds(delay), leeway: .milliseconds(1))
                timer.source.activate()
            }
        } onCancel: {
            let continuation = take()
            timer.source.cancel()
            continuation?.resume(throwing: CancellationError())
        }
    }
}

/// A dispatch timer, to be cancelled from the cancellation handler.
private final class Timer: @unchecked Sendable {
    // @unchecked: a dispatch source may be set up, activated and cancelled from any thread
    // (libdispatch serialises them itself); `source` is never replaced.
    let source: any DispatchSourceTimer
    init(_ source: any DispatchSourceTimer) { self.source = source }

    /// libdispatch traps (SIGILL) when a source that was never activated is released, which a
    /// cancellation before `activate()` leaves. Cancelled first, activating it fires nothing;
    /// activating an active source does nothing.
    deinit {
        source.cancel()
        source.activate()
    }
}
