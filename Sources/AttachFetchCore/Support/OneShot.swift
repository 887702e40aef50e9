import Synchronization

/// Bridges a result produced on another thread into async code, with prompt cancellation:
/// whichever comes first, the result or the task's cancellation, resumes the waiter, once.
/// A result that arrives after the waiter left is refused (`deliver` returns false), so that
/// the producer of work abandoned at a deadline cleans up after itself.
package final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value?, Never>?
        var value: Value?
        var abandoned = false
        var delivered = false
    }

    private let state = Locked(State())

    package init() {}

    /// Called by the producer, exactly once. Returns false when nobody waits any more.
    @discardableResult
    package func deliver(_ value: Value) -> Bool {
        let continuation: CheckedContinuation<Value?, Never>? = state.withLock { state in
            if state.abandoned { return nil }
            state.delivered = true
            if let c = state.continuation {
                state.continuation = nil
                return c
            }
            state.value = value
            return nil
        }
        if let continuation {
            continuation.resume(returning: value)
            return true
        }
        return state.withLock { !$0.abandoned }
    }

    /// True once the waiter has left: the producer may skip work nobody will read.
    package var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Waits for the value; returns nil when the task is cancelled first.
    package func wait() async -> Value? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
                let ready: Value?? = state.withLock { state in
                    if state.abandoned { return .some(nil) }
                    if let value = state.value { return .some(value) }
                    state.continuation = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Value?, Never>? in
                guard !state.delivered else { return nil }
                state.abandoned = true
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(returning: nil)
        }
    }
}
