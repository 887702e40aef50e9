import Synchronization

/// One queued or running download, shared between the task that awaits it and the engine
/// thread. The engine finishes every job exactly once, also when it is cancelled, so the
/// awaiting task learns only after the engine has removed any partial file.
final class TransferJob: Sendable {
    package let spec: TransferSpec
    /// When it was handed to the engine: the wait for a transfer slot counts from here.
    let queuedAt = ContinuousClock.now

    private struct State {
        var continuation: CheckedContinuation<TransferOutcome, Never>?
        /// Kept only until the awaiting task takes it: it may hold the body file open.
        var outcome: TransferOutcome?
        var finished = false
        var cancelRequested = false
    }

    private let state = Locked(State())
    /// Retried once already (after a Retry-After).
    private let retried = Atomic<Bool>(false)

    /// True the first time only: a job is retried at most once.
    func takeRetry() -> Bool { !retried.exchange(true, ordering: .relaxed) }

    init(spec: TransferSpec) { self.spec = spec }

    var isCancelRequested: Bool { state.withLock { $0.cancelRequested } }

    func requestCancel() { state.withLock { $0.cancelRequested = true } }

    /// Engine side: called exactly once.
    package func finish(_ outcome: TransferOutcome) {
        let continuation = state.withLock { state -> CheckedContinuation<TransferOutcome, Never>? in
            precondition(!state.finished, "a transfer job finishes once")
            state.finished = true
            guard let continuation = state.continuation else {
                state.outcome = outcome
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(returning: outcome)
    }

    /// Awaiting side.
    package func outcome() async -> TransferOutcome {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> TransferOutcome? in
                if let outcome = state.outcome {
                    state.outcome = nil
                    return outcome
                }
                state.continuation = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
