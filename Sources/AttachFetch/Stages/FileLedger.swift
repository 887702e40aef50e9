#if canImport(Glibc)
import Glibc
#endif

/// Owns every file made for one attachment on its way: the downloaded body, a converted image or
/// video, the thumbnail or poster. What is not handed over (`deliver`) is removed at `close()`,
/// wherever the flow stopped; a file that arrives after `close()` (work abandoned at the
/// deadline that finished later) is removed at once. Shared between the attachment's task and
/// the worker threads, so it locks.
final class FileLedger: Sendable {
    private struct State {
        var owned: Set<String> = []
        /// Unnamed files (UnnamedFile), by descriptor: dropping one frees it.
        var unnamed: [Int32: UnnamedFile] = [:]
        var closed = false
    }

    private let state = Locked(State())
    /// Called after a file that arrived late was removed (the batch may remove its directory then).
    private let afterLateRemoval: @Sendable () -> Void

    init(afterLateRemoval: @escaping @Sendable () -> Void = {}) {
        self.afterLateRemoval = afterLateRemoval
    }

    /// Takes ownership of `paths` (files that may or may not exist yet). Working paths of
    /// unnamed files are skipped: the ledger owns those as `UnnamedFile`s.
    func own(_ paths: [String]) {
        let paths = paths.filter { UnnamedFile.descriptor(in: $0) == nil }
        guard !paths.isEmpty else { return }
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

    /// Takes ownership of an unnamed file and returns its working path, which (with or without
    /// an extension) stands for it in `remove` and `deliver`. Nil once closed: the file is not
    /// kept, the caller's reference is the last and frees it, and its descriptor's number may
    /// then name another file of the process, so no path to it is handed out.
    func own(_ file: UnnamedFile) -> String? {
        let kept = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.unnamed[file.descriptor] = file
            return true
        }
        return kept ? file.path : nil
    }

    /// Removes an owned file now (superseded: the original after a conversion). A file the
    /// ledger does not own is left alone.
    func remove(_ path: String) {
        if let descriptor = UnnamedFile.descriptor(in: path) {
            let dropped = state.withLock { $0.unnamed.removeValue(forKey: descriptor) }
            _ = dropped  // freed here, outside the lock
            return
        }
        if state.withLock({ $0.owned.remove(path) }) != nil { unlink(path) }
    }

    /// The file leaves the ledger: it is delivered (or was moved away), so `close` keeps it.
    /// An unnamed file is returned: whoever keeps the result keeps it open.
    @discardableResult
    func deliver(_ path: String) -> UnnamedFile? {
        if let descriptor = UnnamedFile.descriptor(in: path) {
            return state.withLock { $0.unnamed.removeValue(forKey: descriptor) }
        }
        state.withLock { _ = $0.owned.remove(path) }
        return nil
    }

    /// Removes every file still owned. Files offered afterwards are removed as they arrive.
    func close() {
        let (leftovers, unnamed) = state.withLock { state -> (Set<String>, [Int32: UnnamedFile]) in
            state.closed = true
            defer { (state.owned, state.unnamed) = ([], [:]) }
            return (state.owned, state.unnamed)
        }
        for path in leftovers { unlink(path) }
        _ = unnamed  // closed here, outside the lock
    }
}
