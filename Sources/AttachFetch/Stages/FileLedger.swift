#if canImport(Glibc)
#if canImport(Glibc)
import Glibc
#endif
#endif

/// Owns every file made for one attachment on its way: the downloaded body, a converted image or
/// video, the thumbnail or poster. What is not handed over (`deliver`) is removed at `close()`,
/// wherever the flow stopped; a file that arrives after `close()` (work abandoned at the
/// deadline that finished later) is removed at once. Shared between the attachment's task and
/// the worker threads, so it locks.
final class FileLedger: Sendable {
    private struct State {
        var owned: Set<String> = []
        var closed = false
    }

    private let state = Locked(State())
    /// Called after a file that arrived late was removed (the batch may remove its directory then).
    private let afterLateRemoval: @Sendable () -> Void

    init(afterLateRemoval: @escaping @Sendable () -> Void = {}) {
        self.afterLateRemoval = afterLateRemoval
    }

    /// Takes ownership of `paths` (files that may or may not exist yet).
    func own(_ paths: [String]) {
        let late = state.withLock { state -> Bool in
            if state.closed { return true }
            state.owned.formUnion(paths)
            return false
        }
        guard late else { return }
        for path in paths { unlink(path) }
        afterLateRemoval()
    }

    func own(_ path: String) { own([path]) }

    /// Removes an owned file now (superseded: the original after a conversion). A file the
    /// ledger does not own is left alone.
    func remove(_ path: String) {
        if state.withLock({ $0.owned.remove(path) }) != nil { unlink(path) }
    }

    /// The file leaves the ledger: it is delivered (or was moved away), so `close` keeps it.
    func deliver(_ path: String) {
        state.withLock { _ = $0.owned.remove(path) }
    }

    /// Removes every file still owned. Files offered afterwards are removed as they arrive.
    func close() {
        let leftovers = state.withLock { state -> Set<String> in
            state.closed = true
            defer { state.owned = [] }
            return state.owned
        }
        for path in leftovers { unlink(path) }
    }
}
