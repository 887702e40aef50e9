import EncryptedContent
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session's delegate: routes each task's callbacks to its download.
///
/// `@unchecked Sendable`: `table`, `expiredCalls` and `calls` are only touched under `lock`.
final class Downloads: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var table: [Int: (download: Download, task: URLSessionTask, call: UInt64?)] = [:]
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
            table[task.taskIdentifier] = (download, task, call)
            return true
        }
    }

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

    private func download(_ task: URLSessionTask) -> Download? {
        lock.withLock { table[task.taskIdentifier]?.download }
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

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else {
            download(dataTask)?.stop(DeviceFetchError(.httpStatus, "the server answered \(status)"))
            return completionHandler(.cancel)
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if download(dataTask)?.receive(data) == false { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let entry = lock.withLock { table.removeValue(forKey: task.taskIdentifier) }
        entry?.download.complete(error)
    }
}

/// One attachment's stream: decrypted, hashed and written as it arrives.
///
/// `@unchecked Sendable`: the mutable state is only touched under `lock`; the delegate queue
/// is serial, and `stop` (deadline, cancellation) takes the lock too.
final class Download: @unchecked Sendable {
    let attachment: EncryptedAttachment
    private let lock = NSLock()
    private var decoder: ContentDecoder
    private let output: FileHandle
    private let limit: Int64
    private var hasher = SHA256Hasher()
    private var written: Int64 = 0
    /// Ciphertext bytes received so far.
    private var received: Int64 = 0
    private var failure: DeviceFetchError?
    private var continuation: CheckedContinuation<Result<Int64, DeviceFetchError>, Never>?

    init(attachment: EncryptedAttachment, decoder: ContentDecoder, output: FileHandle, limit: Int64) {
        self.attachment = attachment
        self.decoder = decoder
        self.output = output
        self.limit = limit
    }

    func start(_ continuation: CheckedContinuation<Result<Int64, DeviceFetchError>, Never>) {
        lock.withLock { self.continuation = continuation }
    }

    /// Ends the download with `error` (the first reason wins).
    func stop(_ error: DeviceFetchError) {
        lock.withLock { if failure == nil { failure = error } }
    }

    /// False once the download has failed: the task should stop.
    func receive(_ data: Data) -> Bool {
        lock.withLock {
            guard failure == nil else { return false }
            do {
                received += Int64(data.count)
                try checkLength()
                try decoder.feed(data) { try write($0) }
                // The header may have come in this chunk.
                try checkLength()
                return true
            } catch {
                failure = Self.translate(error)
                return false
            }
        }
    }

    /// A body longer than `limit` bytes of plaintext can be encrypted to is refused as it
    /// arrives: the plaintext limit alone would let through a body whose records never open
    /// (one huge record, or bytes that never end).
    private func checkLength() throws {
        guard let bound = decoder.maxContentLength(forPlaintext: limit), received > bound else { return }
        throw DeviceFetchError(.tooLarge, "\(attachment.identifier) is longer than the \(bound) bytes that \(limit) bytes of plaintext encrypt to")
    }

    func complete(_ error: (any Error)?) {
        let (continuation, result) = lock.withLock { () -> (CheckedContinuation<Result<Int64, DeviceFetchError>, Never>?, Result<Int64, DeviceFetchError>) in
            defer { self.continuation = nil }
            return (self.continuation, finish(error))
        }
        continuation?.resume(returning: result)
    }

    private func finish(_ error: (any Error)?) -> Result<Int64, DeviceFetchError> {
        if let failure { return .failure(failure) }
        if let error { return .failure(DeviceFetchError(.transferFailed, "the download failed: \(error.localizedDescription)")) }
        do {
            try decoder.finish { try write($0) }
        } catch {
            return .failure(Self.translate(error))
        }
        let digest = hasher.hex
        guard digest == attachment.sha256 else {
            return .failure(DeviceFetchError(.hashMismatch, "the decrypted bytes' SHA-256 is \(digest), not the payload's \(attachment.sha256)"))
        }
        return .success(written)
    }

    private func write(_ plaintext: [UInt8]) throws {
        written += Int64(plaintext.count)
        guard written <= limit else {
            throw DeviceFetchError(.tooLarge, "\(attachment.identifier) is larger than \(limit) bytes")
        }
        hasher.update(plaintext)
        do { try output.write(contentsOf: plaintext) } catch {
            throw DeviceFetchError(.ioError, "cannot write the decrypted file: \(error.localizedDescription)")
        }
    }

    private static func translate(_ error: any Error) -> DeviceFetchError {
        if let error = error as? DeviceFetchError { return error }
        guard let error = error as? ContentEncryptionError else { return DeviceFetchError(.ioError, "\(error)") }
        switch error.code {
        case .wrongKey: return DeviceFetchError(.wrongKey, error.message)
        case .authenticationFailed: return DeviceFetchError(.authenticationFailed, error.message)
        case .truncated: return DeviceFetchError(.truncated, error.message)
        case .recordTooLarge: return DeviceFetchError(.tooLarge, error.message)
        default: return DeviceFetchError(.malformedContent, error.message)
        }
    }
}
