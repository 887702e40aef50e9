import EncryptedContent
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The downloads under way, by the call they belong to: what the deadline and cancellation
/// reach.
///
/// `@unchecked Sendable`: `table`, `expiredCalls` and `calls` are only touched under `lock`.
final class Downloads: @unchecked Sendable {
    private let lock = NSLock()
    private var table: [ObjectIdentifier: (download: Download, task: URLSessionTask, call: UInt64?)] = [:]
    /// Calls whose deadline has fired while they run.
    private var expiredCalls: Set<UInt64> = []
    private var calls: UInt64 = 0

    /// A number for one `fetch(_:deadline:)` call.
    func newCall() -> UInt64 { lock.withLock { calls += 1; return calls } }

    /// Adds a download of `call`; false when that call's deadline has fired already (the
    /// download must then not start).
    func add(_ download: Download, for task: URLSessionTask, call: UInt64?) -> Bool {
        lock.withLock {
            if let call, expiredCalls.contains(call) { return false }
            table[ObjectIdentifier(download)] = (download, task, call)
            return true
        }
    }

    /// The download's range task has ended.
    func remove(_ download: Download) { _ = lock.withLock { table.removeValue(forKey: ObjectIdentifier(download)) } }

    /// Whether a download of `url` has started and not completed.
    func isUnderWay(_ url: URL) -> Bool { lock.withLock { table.values.contains { $0.task.originalRequest?.url == url } } }

    /// The call has returned.
    func forget(call: UInt64) { _ = lock.withLock { expiredCalls.remove(call) } }

    /// Why a download of `call` whose task is cancelled stops: the call's deadline once it has
    /// fired (the deadline race cancels what is still running), else the caller's cancellation.
    func stopReason(call: UInt64?, _ attachment: EncryptedAttachment) -> DeviceFetchError {
        let expired = lock.withLock { call.map { expiredCalls.contains($0) } ?? false }
        return expired ? DeviceFetchError(.deadlineExceeded, "the deadline came before \(attachment.identifier) was whole")
            : DeviceFetchError(.cancelled, "cancelled")
    }

    /// `call`'s deadline: its downloads still running end as `deadlineExceeded`, and those
    /// not yet started never start.
    func expire(call: UInt64) {
        let running = lock.withLock {
            expiredCalls.insert(call)
            return table.values.filter { $0.call == call }
        }
        for (download, task, _) in running {
            download.stop(DeviceFetchError(.deadlineExceeded, "the deadline came before \(download.attachment.identifier) was whole"))
            task.cancel()
        }
    }
}
