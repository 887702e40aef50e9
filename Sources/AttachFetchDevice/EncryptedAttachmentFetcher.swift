import DeadlineRace
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

/// Downloads encrypted attachments and decrypts them record by record into files in
/// `directory`. Each object comes in ranges of `rangeBytes`, each written to a file by the
/// session as it arrives and decrypted from there: memory holds two records at most (of
/// 16 MiB at most; 64 KiB as attach-fetch publishes) and a 64 KiB read, never a range or the
/// file, whatever the server sends. Each file's SHA-256 is checked against the payload.
/// Whatever fails, is cut off by the deadline or cancelled leaves no file behind in
/// `directory`.
public final class EncryptedAttachmentFetcher: Sendable {
    /// Where decrypted files are written.
    public let directory: URL
    /// The most plaintext one attachment may have. Default 50 MiB, the video limit the service
    /// publishes under. The payload's `bytes`, when smaller, is the limit; a body longer than
    /// the limit encrypts to is refused as it arrives (`tooLarge`).
    public let maxBytes: Int64
    /// The most bytes asked for in one request. Default 4 MiB. An object is fetched in ranges
    /// (`Range: bytes=…`) one after the other, each into a file the session writes, so that
    /// the disk holds at most one range ahead of the decryption. A server that answers `200`
    /// with the whole object is taken only for an object no longer than one range
    /// (`transferFailed` otherwise, at its first bytes).
    public let rangeBytes: Int64
    private let session: URLSession
    private let downloads: Downloads
    private let callbacks: DispatchQueue
    /// Awaited before each range is decrypted, with the attachment's identifier: lets a test
    /// hold one download's decryption while others go on.
    let beforeDecrypting: (@Sendable (String) async -> Void)?

    /// `configuration`'s session is used for every download (ephemeral by default: nothing is
    /// cached on disk in plaintext or otherwise).
    public convenience init(directory: URL = FileManager.default.temporaryDirectory, maxBytes: Int64 = 52_428_800,
                rangeBytes: Int64 = 4 << 20, configuration: URLSessionConfiguration = .ephemeral) {
        self.init(directory: directory, maxBytes: maxBytes, rangeBytes: rangeBytes, configuration: configuration, beforeDecrypting: nil)
    }

    init(directory: URL, maxBytes: Int64, rangeBytes: Int64, configuration: URLSessionConfiguration,
         beforeDecrypting: (@Sendable (String) async -> Void)?) {
        self.beforeDecrypting = beforeDecrypting
        self.directory = directory
        self.maxBytes = maxBytes
        self.rangeBytes = max(1, rangeBytes)
        downloads = Downloads()
        // One serial queue for the session's completion handlers and the downloads' watches, so
        // that a range's state has one thread at a time. They only check, open and resume:
        // each download decrypts in its own task, so none holds up another's callbacks.
        callbacks = DispatchQueue(label: "attach-fetch.device.callbacks")
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.underlyingQueue = callbacks
        // No delegate: FoundationNetworking queues every chunk it reads for a delegate (Download).
        session = URLSession(configuration: configuration, delegate: nil, delegateQueue: queue)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Whether a download of `url` is under way (for tests, which wait for one to have started).
    func isDownloading(_ url: URL) -> Bool { downloads.isUnderWay(url) }

    /// Fetches every attachment the notification's `userInfo` lists (`EncryptedPayload`), at
    /// the same time, until `deadline`. Returns one result per attachment, in order: what is
    /// done by the deadline or cancellation is kept; the rest is `deadlineExceeded` or
    /// `cancelled`. A payload without an `attach-fetch` block has no attachments: the answer
    /// is an empty list, at once.
    public func fetch(userInfo: [AnyHashable: Any], deadline: Date) async throws(DeviceFetchError)
        -> [Result<FetchedAttachment, DeviceFetchError>] {
        await fetch(try EncryptedPayload.attachments(in: userInfo), deadline: deadline)
    }

    /// Fetches `attachments` at the same time until `deadline`; one result each, in order. It
    /// returns as soon as the last one is done (at once when there are none), and at the
    /// deadline with what is done. Any date will do: one already past ends every download
    /// before it starts, and `Date.distantFuture` waits for all of them.
    public func fetch(_ attachments: [EncryptedAttachment], deadline: Date) async -> [Result<FetchedAttachment, DeviceFetchError>] {
        guard !attachments.isEmpty else { return [] }
        // The deadline is this call's: it ends this call's downloads, including one that starts
        // only after it has passed, and no other call's.
        let call = downloads.newCall()
        defer { downloads.forget(call: call) }
        var results = [Result<FetchedAttachment, DeviceFetchError>?](repeating: nil, count: attachments.count)
        let jobs = attachments.map { attachment in
            { @Sendable () async -> Result<FetchedAttachment, DeviceFetchError> in await self.fetch(attachment, call: call) }
        }
        // The race cancels the downloads still running once the sentinel returns; expiring the
        // call first makes those cancellations `deadlineExceeded`, not `cancelled`.
        await Deadline.race(jobs, waitForDeadline: { [downloads] in
            if await Deadline.sleep(until: deadline) { downloads.expire(call: call) }
        }, each: { index, result in results[index] = result })
        return results.map { $0 ?? .failure(DeviceFetchError(.deadlineExceeded, "the deadline came first")) }
    }

    /// One attachment, or why not.
    public func fetch(_ attachment: EncryptedAttachment) async -> Result<FetchedAttachment, DeviceFetchError> {
        await fetch(attachment, call: nil)
    }

    /// One attachment, as a part of `call` (whose deadline ends it) when given.
    private func fetch(_ attachment: EncryptedAttachment, call: UInt64?) async -> Result<FetchedAttachment, DeviceFetchError> {
        if Task.isCancelled { return .failure(downloads.stopReason(call: call, attachment)) }
        guard let key = ContentKey(base64URL: attachment.key) else {
            return .failure(DeviceFetchError(.malformedPayload, "the key of \(attachment.identifier) is not 16 bytes of base64url"))
        }
        let file = directory.appendingPathComponent("\(UUID().uuidString).\(attachment.fileExtension)")
        guard FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600]),
              let handle = try? FileHandle(forWritingTo: file) else {
            return .failure(DeviceFetchError(.ioError, "cannot create a file in \(directory.path)"))
        }
        let limit = min(attachment.bytes ?? maxBytes, maxBytes)
        let download = Download(attachment: attachment, decoder: ContentDecoder(key: key), output: handle, limit: limit,
                                rangeBytes: rangeBytes)
        var outcome: Result<Download.Step, DeviceFetchError> = .success(.more)
        while case .success(.more) = outcome {
            if Task.isCancelled {
                outcome = .failure(downloads.stopReason(call: call, attachment))
            } else {
                switch await fetchRange(of: download, call: call) {
                case .failure(let error): outcome = .failure(error)
                case .success(let body):
                    await beforeDecrypting?(attachment.identifier)
                    outcome = download.decrypt(body)
                }
            }
        }
        try? handle.close()
        switch outcome {
        case .success(.done(let bytes)):
            return .success(FetchedAttachment(identifier: attachment.identifier, fileURL: file, typeHint: attachment.typeHint,
                                              thumbnailOptions: attachment.thumbnailOptions, bytes: bytes))
        case .success(.more):
            preconditionFailure("the loop ends on the last range")
        case .failure(let error):
            try? FileManager.default.removeItem(at: file)
            return .failure(error)
        }
    }

    /// The download's next range, downloaded into a file by a task of its own that the deadline
    /// and cancellation end: the file, open for reading.
    private func fetchRange(of download: Download, call: UInt64?) async -> Result<FileHandle, DeviceFetchError> {
        let attachment = download.attachment
        let task = session.downloadTask(with: download.nextRequest()) { [downloads] location, response, error in
            downloads.remove(download)
            download.finished(at: location, response: response, error: error)
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                download.start(continuation)
                if downloads.add(download, for: task, call: call) {
                    // Before the task runs: its completion cancels the watch.
                    download.watch(task, every: .milliseconds(5), on: callbacks)
                    task.resume()
                } else {
                    download.stop(DeviceFetchError(.deadlineExceeded, "the deadline came before \(attachment.identifier) was whole"))
                    download.complete(nil)
                    task.cancel()
                }
            }
        } onCancel: {
            download.stop(downloads.stopReason(call: call, attachment))
            task.cancel()
        }
    }
}
