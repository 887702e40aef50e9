import DequeModule

/// Attachments in flight across every batch of a pipeline: a batch's window bounds one batch,
/// these bound them all, so that many small batches at once (the service's) cost the memory of
/// `maxAttachmentsInFlight × 4` attachments at most, not of all they hold. An attachment waiting
/// here has its task but not yet its work: about 1 KiB, against about 60 KiB once started.
/// First come, first served.
final class AttachmentPermits: Sendable {
    private struct State {
        var available: Int
        var nextID = 0
        var waiting: Deque<(id: Int, continuation: CheckedContinuation<Bool, Never>)> = []
        /// Waiting, their continuation not recorded yet.
        var arriving: Set<Int> = []
        /// Of those, the ones cancelled already.
        var cancelledEarly: Set<Int> = []
    }

    private let state: Locked<State>
    /// Runs when a waiter has its id and before its continuation is recorded: the window in
    /// which a `release` finds nobody waiting. For the test that holds it open; nil otherwise.
    private let whileArriving: (@Sendable () -> Void)?

    init(count: Int, whileArriving: (@Sendable () -> Void)? = nil) {
        state = Locked(State(available: count))
        self.whileArriving = whileArriving
    }

    /// Waits for a permit: true once it has one (to be given back with `release`), false when
    /// the task was cancelled first (nothing to give back).
    func acquire() async -> Bool {
        let id: Int? = state.withLock { state in
            if state.available > 0 {
                state.available -= 1
                return nil
            }
            state.nextID += 1
            state.arriving.insert(state.nextID)
            return state.nextID
        }
        guard let id else { return true }
        whileArriving?()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let answer = state.withLock { state -> Bool? in
                    state.arriving.remove(id)
                    if state.cancelledEarly.remove(id) != nil { return false }
                    // A permit given back while this waiter arrived found nobody waiting and was
                    // made available: it is this waiter's (none waits before it, or the permit
                    // would have gone to that one).
                    if state.available > 0 {
                        state.available -= 1
                        return true
                    }
                    state.waiting.append((id, continuation))
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else {
                    // Not recorded yet (it answers itself), or given a permit already (it keeps it).
                    if state.arriving.contains(id) { state.cancelledEarly.insert(id) }
                    return nil
                }
                return state.waiting.remove(at: index).continuation
            }
            waiter?.resume(returning: false)
        }
    }

    /// Waiters whose continuation is recorded: a test orders its waiters by this, not by sleeping.
    var waiters: Int { state.withLock { $0.waiting.count } }

    /// Gives a permit back: to the longest waiter, if any.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard !state.waiting.isEmpty else {
                state.available += 1
                return nil
            }
            return state.waiting.removeFirst().continuation
        }
        next?.resume(returning: true)
    }
}
