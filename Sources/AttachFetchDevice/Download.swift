import EncryptedContent
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One attachment's stream: fetched in ranges of at most `rangeBytes`, one after the other,
/// decrypted, hashed and written as each range arrives.
///
/// Why ranges: FoundationNetworking's URLSession has no back pressure. Its transfer thread
/// queues every chunk it reads for the delegate, so a fast server and a busy core would
/// otherwise queue the whole object (tens of MiB, past a Notification Service Extension's
/// 24 MiB). A range's length is fixed by its headers before its body flows, so at most one
/// range is ever queued.
///
/// `@unchecked Sendable`: the stream's state (decoder, hasher, counters, file) is touched by
/// one thread at a time: the session's serial delegate queue while a range is under way, and
/// the fetching task between ranges, which asks for the next range only once the last one's
/// completion has resumed it. `failure` and `continuation`, which the deadline and
/// cancellation reach from other threads, are under `lock`, held for an assignment only: no
/// decryption or file write ever runs under it.
final class Download: @unchecked Sendable {
    /// What one range's request ends with.
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
    /// Ciphertext bytes received so far: where the range under way started, until it ends.
    private var received: Int64 = 0
    /// Where the range under way starts, and how long its headers say it is.
    private var rangeStart: Int64 = 0
    private var rangeLength: Int64 = 0
    /// The object's length, once a response has said it.
    private var total: Int64?
    private var stoppedWith: DeviceFetchError?
    private var failure: DeviceFetchError? { lock.withLock { stoppedWith } }
    private var continuation: CheckedContinuation<Result<Step, DeviceFetchError>, Never>?

    init(attachment: EncryptedAttachment, decoder: ContentDecoder, output: FileHandle, limit: Int64, rangeBytes: Int64) {
        self.attachment = attachment
        self.decoder = decoder
        self.output = output
        self.limit = limit
        self.rangeBytes = rangeBytes
    }

    /// The request for the next range.
    func nextRequest() -> URLRequest {
        let start = received
        var request = URLRequest(url: attachment.url)
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.setValue("bytes=\(start)-\(start + rangeBytes - 1)", forHTTPHeaderField: "Range")
        return request
    }

    func start(_ continuation: CheckedContinuation<Result<Step, DeviceFetchError>, Never>) {
        lock.withLock { self.continuation = continuation }
    }

    /// Ends the download with `error` (the first reason wins).
    func stop(_ error: DeviceFetchError) {
        lock.withLock { if stoppedWith == nil { stoppedWith = error } }
    }

    /// Whether the response's body may flow: the range asked for (206), or at the start the
    /// whole object when it is no longer than a range (200, from a server without ranges).
    func begin(_ response: HTTPURLResponse?) -> Bool {
        guard failure == nil else { return false }
        do {
            try accept(response)
            return true
        } catch {
            stop(Self.translate(error))
            return false
        }
    }

    private func accept(_ response: HTTPURLResponse?) throws {
        let status = response?.statusCode ?? 0
        let stated = response?.expectedContentLength ?? -1
        rangeStart = received
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

    /// False once the download has failed: the task should stop.
    func receive(_ data: Data) -> Bool {
        guard failure == nil else { return false }
        do {
            received += Int64(data.count)
            guard received - rangeStart <= rangeLength else {
                throw DeviceFetchError(.transferFailed, "the server sent more than the \(rangeLength) bytes its headers stated")
            }
            try decoder.feed(data) { try write($0) }
            // The header may have come in this chunk.
            try checkLength(total ?? received)
            return true
        } catch {
            stop(Self.translate(error))
            return false
        }
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

    func complete(_ error: (any Error)?) {
        let result = finish(error)
        let continuation = lock.withLock {
            defer { self.continuation = nil }
            return self.continuation
        }
        continuation?.resume(returning: result)
    }

    private func finish(_ error: (any Error)?) -> Result<Step, DeviceFetchError> {
        if let failure { return .failure(failure) }
        if let error { return .failure(DeviceFetchError(.transferFailed, "the download failed: \(error.localizedDescription)")) }
        guard received - rangeStart == rangeLength else {
            return .failure(DeviceFetchError(.transferFailed, "the server's answer ended after \(received - rangeStart) of \(rangeLength) bytes"))
        }
        if let total, received < total { return .success(.more) }
        do {
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

/// A `Content-Range: bytes first-last/total` header (RFC 9110, 14.4); an unknown total (`*`)
/// is not taken.
struct ContentRange: Equatable {
    var first: Int64
    var last: Int64
    var total: Int64
    var length: Int64 { last - first + 1 }

    init?(_ header: String) {
        let parts = header.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return nil }
        let spanAndTotal = parts[1].split(separator: "/")
        guard spanAndTotal.count == 2, let total = Int64(spanAndTotal[1]) else { return nil }
        let span = spanAndTotal[0].split(separator: "-")
        guard span.count == 2, let first = Int64(span[0]), let last = Int64(span[1]),
              first >= 0, first <= last, last < total else { return nil }
        (self.first, self.last, self.total) = (first, last, total)
    }
}
