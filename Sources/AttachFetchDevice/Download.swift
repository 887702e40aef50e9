import EncryptedContent
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One attachment's stream: fetched in ranges of at most `rangeBytes`, one after the other,
/// each downloaded into a file by the session, then decrypted from that file, hashed and
/// written.
///
/// Why download tasks with a completion handler: `URLSession` has no back pressure, and what
/// FoundationNetworking reads is queued for a delegate whatever the delegate answers: a data
/// task's chunks for `didReceive`, a download task's for `didWriteData` (the operation keeps
/// each chunk to count it). A download task with a completion handler writes each chunk to its
/// file as it reads it and queues nothing, so memory holds a transfer's buffer whatever the
/// server sends (docs/encryption.md has the measurements). A watch on the task (`check`)
/// cancels an answer that is not the range asked for, so the disk holds about one range.
///
/// `@unchecked Sendable`: the range under way (`accepted`, `rangeLength`, `body`, `watch`) is
/// touched on the fetcher's callback queue alone (the session's completion handlers and the
/// watch's timer run there), and the stream (decoder, hasher, counters, file) by the fetching
/// task between ranges, which asks for the next range only once the last one's completion has
/// resumed it. `stoppedWith` and `continuation`, which the deadline and cancellation reach from
/// other threads, are under `lock`, held for an assignment only: no decryption or file access
/// ever runs under it.
final class Download: @unchecked Sendable {
    /// What one range ends with.
    enum Step: Sendable, Equatable {
        /// The range is in; the next one follows.
        case more
        /// The object is whole: this many plaintext bytes, hash checked.
        case done(Int64)
    }

    let attachment: EncryptedAttachment
    private let lock = NSLock()
    private var decoder: ContentDecoder
    private let output: FileHandle
    private let limit: Int64
    private let rangeBytes: Int64
    private var hasher = SHA256Hasher()
    private var written: Int64 = 0
    /// Ciphertext bytes decrypted so far: where the next range starts.
    private var received: Int64 = 0
    /// Whether the range's headers have been checked, and how long they say it is.
    private var accepted = false, rangeLength: Int64 = 0
    /// The range's bytes once the session has written them, and the timer checking its task.
    private var body: FileHandle?
    private var watchdog: DispatchSourceTimer?
    /// The object's length, once a response has said it.
    private var total: Int64?
    private var stoppedWith: DeviceFetchError?
    private var failure: DeviceFetchError? { lock.withLock { stoppedWith } }
    private var continuation: CheckedContinuation<Result<FileHandle, DeviceFetchError>, Never>?

    init(attachment: EncryptedAttachment, decoder: ContentDecoder, output: FileHandle, limit: Int64, rangeBytes: Int64) {
        self.attachment = attachment
        self.decoder = decoder
        self.output = output
        self.limit = limit
        self.rangeBytes = rangeBytes
    }

    /// The request for the next range.
    func nextRequest() -> URLRequest {
        accepted = false
        body = nil
        let start = received
        var request = URLRequest(url: attachment.url)
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.setValue("bytes=\(start)-\(start + rangeBytes - 1)", forHTTPHeaderField: "Range")
        return request
    }

    func start(_ continuation: CheckedContinuation<Result<FileHandle, DeviceFetchError>, Never>) {
        lock.withLock { self.continuation = continuation }
    }

    /// Ends the download with `error` (the first reason wins).
    func stop(_ error: DeviceFetchError) {
        lock.withLock { if stoppedWith == nil { stoppedWith = error } }
    }

    /// What the session has said of the range so far: its response once it has one (Apple's
    /// `URLSession` gives it with the headers, FoundationNetworking only when the task ends),
    /// the body's stated length (0 before the headers, -1 when unstated) and the bytes
    /// written. False when the task should stop: the answer is not the range asked for, is
    /// longer than its headers said, or than the payload allows.
    func check(response: URLResponse?, expected: Int64, written: Int64) -> Bool {
        guard failure == nil else { return false }
        do {
            if let response = response as? HTTPURLResponse {
                try acceptOnce(response)
                guard written <= rangeLength else {
                    throw moreThanStated
                }
                try checkLength(total ?? received + written)
            } else if expected != 0 {
                guard expected > 0 else {
                    throw DeviceFetchError(.transferFailed,
                        "the server answered the range from \(received) of \(attachment.identifier) without stating its length: a range's answer needs a Content-Length")
                }
                guard expected <= rangeBytes else {
                    throw DeviceFetchError(.transferFailed,
                        "the server answered the range from \(received) of \(attachment.identifier) with \(expected) bytes where at most \(rangeBytes) were asked for: a larger object needs a server that honours Range")
                }
                try checkLength(received + expected)
            }
            return true
        } catch {
            stop(Self.translate(error))
            return false
        }
    }

    /// Checks the task's counts every `interval` on `queue` until the range completes, and
    /// cancels the task once they show a wrong answer.
    func watch(_ task: URLSessionDownloadTask, every interval: DispatchTimeInterval, on queue: DispatchQueue) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [weak self, weak task] in
            guard let self, let task else { return }
            if !check(response: task.response, expected: task.countOfBytesExpectedToReceive, written: task.countOfBytesReceived) {
                task.cancel()
                watchdog?.cancel()
            }
        }
        watchdog = timer
        timer.resume()
    }

    /// The range's task has ended, its body in the file at `location` when it succeeded, which
    /// the session may remove once this returns: the file is opened (the descriptor keeps it)
    /// and removed here. Then the fetching task is resumed with the file or the failure.
    func finished(at location: URL?, response: URLResponse?, error: (any Error)?) {
        watchdog?.cancel()
        watchdog = nil
        if let location {
            defer { try? FileManager.default.removeItem(at: location) }
            collect(location, response: response, error: error)
        }
        complete(error)
    }

    private func collect(_ location: URL, response: URLResponse?, error: (any Error)?) {
        guard failure == nil, error == nil else { return }
        do {
            try acceptOnce(response as? HTTPURLResponse)
            body = try FileHandle(forReadingFrom: location)
        } catch {
            stop(Self.translate(error))
        }
    }

    /// A body longer than its headers said (at the first byte past it, or in the file).
    private var moreThanStated: DeviceFetchError {
        DeviceFetchError(.transferFailed, "the server sent more than the \(rangeLength) bytes its headers stated")
    }

    private func acceptOnce(_ response: HTTPURLResponse?) throws {
        guard !accepted else { return }
        try accept(response)
        accepted = true
    }

    private func accept(_ response: HTTPURLResponse?) throws {
        let status = response?.statusCode ?? 0
        let stated = response?.expectedContentLength ?? -1
        let rangeStart = received
        switch status {
        case 206:
            let header = response?.value(forHTTPHeaderField: "Content-Range") ?? ""
            guard let range = ContentRange(header), range.first == rangeStart, range.last < rangeStart + rangeBytes,
                  stated < 0 || stated == range.length else {
                throw DeviceFetchError(.transferFailed, "the server answered the range from \(rangeStart) with \"\(header)\" and \(stated) bytes")
            }
            if let total, total != range.total {
                throw DeviceFetchError(.transferFailed, "\(attachment.identifier) changed length between ranges: \(total), then \(range.total) bytes")
            }
            total = range.total
            rangeLength = range.length
        case 200:
            guard rangeStart == 0 else {
                throw DeviceFetchError(.transferFailed, "the server answered the range from \(rangeStart) with the whole object")
            }
            try checkLength(stated)
            guard stated >= 0, stated <= rangeBytes else {
                let length = stated < 0 ? "of unstated length" : "of \(stated) bytes"
                throw DeviceFetchError(.transferFailed,
                    "the server sent \(attachment.identifier) whole (\(length)) where \(rangeBytes) bytes were asked for: a larger object needs a server that honours Range")
            }
            total = stated
            rangeLength = stated
        default:
            throw DeviceFetchError(.httpStatus, "the server answered \(status)")
        }
        try checkLength(total ?? 0)
    }

    /// The range is over: the fetching task resumes with its file, or why not.
    func complete(_ error: (any Error)?) {
        let body = self.body
        self.body = nil
        let result: Result<FileHandle, DeviceFetchError>
        if let failure {
            result = .failure(failure)
        } else if let error {
            result = .failure(DeviceFetchError(.transferFailed, "the download failed: \(error.localizedDescription)"))
        } else if let body {
            result = .success(body)
        } else {
            result = .failure(DeviceFetchError(.transferFailed, "the download of \(attachment.identifier) ended without its file"))
        }
        if case .failure = result { try? body?.close() }
        let continuation = lock.withLock {
            defer { self.continuation = nil }
            return self.continuation
        }
        continuation?.resume(returning: result)
    }

    /// Decrypts the range in `body` (and closes it), 64 KiB at a time: the next range follows,
    /// or the object is whole and its hash checked. Stops between chunks once the deadline or
    /// a cancellation has ended the download.
    func decrypt(_ body: FileHandle) -> Result<Step, DeviceFetchError> {
        defer { try? body.close() }
        do {
            var length: Int64 = 0
            while let chunk = try body.read(upToCount: 64 * 1024), !chunk.isEmpty {
                if let failure { throw failure }
                length += Int64(chunk.count)
                guard length <= rangeLength else {
                    throw moreThanStated
                }
                try decoder.feed(chunk) { try write($0) }
                // The header may have come in this chunk.
                try checkLength(total ?? received + length)
            }
            guard length == rangeLength else {
                throw DeviceFetchError(.transferFailed, "the server's answer ended after \(length) of \(rangeLength) bytes")
            }
            received += length
            if let total, received < total { return .success(.more) }
            try decoder.finish { try write($0) }
        } catch {
            return .failure(Self.translate(error))
        }
        let digest = hasher.hex
        guard digest == attachment.sha256 else {
            return .failure(DeviceFetchError(.hashMismatch, "the decrypted bytes' SHA-256 is \(digest), not the payload's \(attachment.sha256)"))
        }
        return .success(.done(written))
    }

    /// An object longer than `limit` bytes of plaintext can be encrypted to is refused: the
    /// plaintext limit alone would let through a body whose records never open (one huge
    /// record, or bytes that never end). Before the stream's header is read, the bound is the
    /// one for the smallest records RFC 8188 allows.
    private func checkLength(_ length: Int64) throws {
        let bound = decoder.maxContentLength(forPlaintext: limit)
            ?? AES128GCM.maxContentLength(plaintext: limit, recordSize: AES128GCM.recordOverhead + 1, headerSize: AES128GCM.maxHeaderSize)
        guard length > bound else { return }
        throw DeviceFetchError(.tooLarge, "\(attachment.identifier) is longer than the \(bound) bytes that \(limit) bytes of plaintext encrypt to")
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
