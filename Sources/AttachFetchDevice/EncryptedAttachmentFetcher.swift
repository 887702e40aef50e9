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

/// Downloads encrypted attachments and decrypts them record by record as they stream in, into
/// files in `directory`: memory holds one range (`rangeBytes`) and two records at most (of
/// 16 MiB at most; 64 KiB as attach-fetch publishes), never the file, whatever the server sends. Each file's SHA-256 is
/// checked against the payload. Whatever fails, is cut off by the deadline or cancelled leaves
/// no file behind.
public final class EncryptedAttachmentFetcher: Sendable {
    /// Where decrypted files are written.
    public let directory: URL
    /// The most plaintext one attachment may have. Default 50 MiB, the video limit the service
    /// publishes under. The payload's `bytes`, when smaller, is the limit; a body longer than
    /// the limit encrypts to is refused as it arrives (`tooLarge`).
    public let maxBytes: Int64
    /// The most bytes asked for in one request. Default 4 MiB. An object is fetched in ranges
    /// (`Range: bytes=…`) one after the other, and only a range's bytes are ever queued ahead
    /// of the decryption, so memory stays bounded however fast the server sends. A server
    /// that answers `200` with the whole object is taken only for an object no longer than
    /// one range (`transferFailed` otherwise, before its body is read).
    public let rangeBytes: Int64
    private let session: URLSession
    private let downloads: Downloads

    /// `configuration`'s session is used for every download (ephemeral by default: nothing is
    /// cached on disk in plaintext or otherwise).
    public init(directory: URL = FileManager.default.temporaryDirectory, maxBytes: Int64 = 52_428_800,
                rangeBytes: Int64 = 4 << 20, configuration: URLSessionConfiguration = .ephemeral) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.rangeBytes = max(1, rangeBytes)
        let downloads = Downloads()
        self.downloads = downloads
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: downloads, delegateQueue: queue)
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
            outcome = Task.isCancelled ? .failure(downloads.stopReason(call: call, attachment)) : await fetchRange(of: download, call: call)
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

    /// The download's next range, as a task of its own that the deadline and cancellation end.
    private func fetchRange(of download: Download, call: UInt64?) async -> Result<Download.Step, DeviceFetchError> {
        let attachment = download.attachment
        let task = session.dataTask(with: download.nextRequest())
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                download.start(continuation)
                if downloads.add(download, for: task, call: call) {
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
