import EncryptedContent
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An encrypted attachment decrypted into a file, ready for `UNNotificationAttachment`.
public struct FetchedAttachment: Sendable, Equatable {
    /// The payload's identifier.
    public var identifier: String
    /// The decrypted file, named with the media's extension. The caller owns it (iOS moves it
    /// into its own store when the attachment is made).
    public var fileURL: URL
    /// The Uniform Type Identifier, for `UNNotificationAttachmentOptionsTypeHintKey`.
    public var typeHint: String?
    /// The thumbnail options.
    public var thumbnailOptions: ThumbnailOptions
    /// The plaintext's size.
    public var bytes: Int64
}

/// Downloads encrypted attachments and decrypts them record by record as they stream in, into
/// files in `directory`: memory holds a few records, never the file. Each file's SHA-256 is
/// checked against the payload. Whatever fails, is cut off by the deadline or cancelled leaves
/// no file behind.
public final class EncryptedAttachmentFetcher: Sendable {
    /// Where decrypted files are written.
    public let directory: URL
    /// The most plaintext one attachment may have. Default 50 MiB, the video limit the service
    /// publishes under.
    public let maxBytes: Int64
    private let session: URLSession
    private let downloads: Downloads

    /// `configuration`'s session is used for every download (ephemeral by default: nothing is
    /// cached on disk in plaintext or otherwise).
    public init(directory: URL = FileManager.default.temporaryDirectory, maxBytes: Int64 = 52_428_800,
                configuration: URLSessionConfiguration = .ephemeral) {
        self.directory = directory
        self.maxBytes = maxBytes
        let downloads = Downloads()
        self.downloads = downloads
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: downloads, delegateQueue: queue)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Fetches every attachment the notification's `userInfo` lists (`EncryptedPayload`), at
    /// the same time, until `deadline`. Returns one result per attachment, in order: what is
    /// done by the deadline or cancellation is kept; the rest is `deadlineExceeded` or
    /// `cancelled`.
    public func fetch(userInfo: [AnyHashable: Any], deadline: Date) async throws(DeviceFetchError)
        -> [Result<FetchedAttachment, DeviceFetchError>] {
        await fetch(try EncryptedPayload.attachments(in: userInfo), deadline: deadline)
    }

    /// Fetches `attachments` at the same time until `deadline`; one result each, in order.
    public func fetch(_ attachments: [EncryptedAttachment], deadline: Date) async -> [Result<FetchedAttachment, DeviceFetchError>] {
        // The deadline is this call's: it ends this call's downloads, including one that starts
        // only after it has passed, and no other call's.
        let call = downloads.newCall()
        defer { downloads.forget(call: call) }
        return await withTaskGroup(of: (Int, Result<FetchedAttachment, DeviceFetchError>)?.self) { group in
            var results = [Result<FetchedAttachment, DeviceFetchError>](
                repeating: .failure(DeviceFetchError(.deadlineExceeded, "the deadline came first")), count: attachments.count)
            for (index, attachment) in attachments.enumerated() {
                group.addTask { (index, await self.fetch(attachment, call: call)) }
            }
            // The deadline sentinel: it ends the downloads still running, which then clean up.
            group.addTask {
                let wait = deadline.timeIntervalSinceNow
                if wait > 0 { try? await Task.sleep(nanoseconds: UInt64(wait * 1e9)) }
                return nil
            }
            var finished = 0
            while let next = await group.next() {
                guard let (index, result) = next else {
                    if finished < attachments.count { downloads.expire(call: call) }
                    continue
                }
                results[index] = result
                finished += 1
                if finished == attachments.count { group.cancelAll() }
            }
            return results
        }
    }

    /// One attachment, or why not.
    public func fetch(_ attachment: EncryptedAttachment) async -> Result<FetchedAttachment, DeviceFetchError> {
        await fetch(attachment, call: nil)
    }

    /// One attachment, as a part of `call` (whose deadline ends it) when given.
    private func fetch(_ attachment: EncryptedAttachment, call: UInt64?) async -> Result<FetchedAttachment, DeviceFetchError> {
        guard let key = ContentKey(base64URL: attachment.key) else {
            return .failure(DeviceFetchError(.malformedPayload, "the key of \(attachment.identifier) is not 16 bytes of base64url"))
        }
        let file = directory.appendingPathComponent("\(UUID().uuidString).\(attachment.fileExtension)")
        guard FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600]),
              let handle = try? FileHandle(forWritingTo: file) else {
            return .failure(DeviceFetchError(.ioError, "cannot create a file in \(directory.path)"))
        }
        let limit = min(attachment.bytes ?? maxBytes, maxBytes)
        let download = Download(attachment: attachment, decoder: ContentDecoder(key: key), output: handle, limit: limit)
        var request = URLRequest(url: attachment.url)
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let task = session.dataTask(with: request)
        let outcome: Result<Int64, DeviceFetchError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                download.start(continuation)
                if downloads.add(download, for: task, call: call) {
                    task.resume()
                } else {
                    download.stop(DeviceFetchError(.deadlineExceeded, "the deadline came before \(attachment.identifier) started"))
                    download.complete(nil)
                    task.cancel()
                }
            }
        } onCancel: {
            download.stop(DeviceFetchError(.cancelled, "cancelled"))
            task.cancel()
        }
        try? handle.close()
        switch outcome {
        case .success(let bytes):
            return .success(FetchedAttachment(identifier: attachment.identifier, fileURL: file, typeHint: attachment.typeHint,
                                              thumbnailOptions: attachment.thumbnailOptions, bytes: bytes))
        case .failure(let error):
            try? FileManager.default.removeItem(at: file)
            return .failure(error)
        }
    }
}

/// The session's delegate: routes each task's callbacks to its download.
///
/// `@unchecked Sendable`: `table`, `expiredCalls` and `calls` are only touched under `lock`.
private final class Downloads: NSObject, URLSessionDataDelegate, @unchecked Sendable {
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

    /// The call has returned.
    func forget(call: UInt64) { _ = lock.withLock { expiredCalls.remove(call) } }

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
private final class Download: @unchecked Sendable {
    let attachment: EncryptedAttachment
    private let lock = NSLock()
    private var decoder: ContentDecoder
    private let output: FileHandle
    private let limit: Int64
    private var hasher = SHA256Hasher()
    private var written: Int64 = 0
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
                try decoder.feed(data) { try write($0) }
                return true
            } catch {
                failure = Self.translate(error)
                return false
            }
        }
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
        default: return DeviceFetchError(.malformedContent, error.message)
        }
    }
}
