import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The pipeline's private directory (mode 0700, from mkdtemp, a hidden name in the temporary
/// directory) where shared work streams bodies and makes files, and where finished results
/// live while someone holds them. It exists only while held: the first holder makes it, the
/// last one's release removes it, so an idle pipeline leaves nothing in the temporary
/// directory. Working names start with a dot; results are `r<number>.<extension>`.
final class WorkStore: Sendable {
    private struct State {
        var path: String?
        var holders = 0
    }

    private let parent: String
    private let state = Locked(State())

    init(parent: String) {
        self.parent = parent.hasSuffix("/") ? String(parent.dropLast()) : parent
    }

    /// Holds the directory (making it when nobody held it) and returns its path.
    func acquire() throws(AttachFetchError) -> String {
        let result: Result<String, AttachFetchError> = state.withLock { state in
            if let path = state.path {
                state.holders += 1
                return .success(path)
            }
            do throws(AttachFetchError) {
                let path = try PrivateDirectory.create(in: parent, prefix: ".attach-fetch-")
                state.path = path
                state.holders = 1
                return .success(path)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Lets go of the directory; the last holder removes it (unless a late file is still in it:
    /// `tidy` then removes it once that file is gone).
    func release() {
        state.withLock { state in
            state.holders -= 1
            Self.removeIfIdle(&state)
        }
    }

    /// A late file (from work abandoned at a deadline) was removed: the directory may be
    /// removable now.
    func tidy() {
        state.withLock { Self.removeIfIdle(&$0) }
    }

    private static func removeIfIdle(_ state: inout State) {
        guard state.holders == 0, let path = state.path else { return }
        if rmdir(path) == 0 || errno == ENOENT { state.path = nil }
    }
}
