internal import CCurl
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One running download: owns its curl easy handle, the body file's descriptor and the
/// running hash. Its write callback only moves bytes: `BodyAdmission` decides what the body is
/// and whether it may go on, and what it lets through goes into the file and the hash. Lives on
/// the engine thread only (libcurl calls its callbacks there), so it is deliberately not
/// Sendable.
final class EasyTransfer {
    package let job: TransferJob
    package let handle: UnsafeMutableRawPointer
    let startedAt: ContinuousClock.Instant
    package let errorBuffer: UnsafeMutablePointer<CChar>
    /// The body file (opened by `prepare`, closed by `complete`).
    package var fileDescriptor: Int32 = -1
    /// The unnamed body file, when there is one (it owns `fileDescriptor`).
    package var body: UnnamedFile?
    private let digest = SHA256Digest()
    private var admission: BodyAdmission
    /// Content-Length of the response being received (the last one, after redirects).
    private(set) var declaredLength: Int64?
    /// Header bytes of the response being received; capped so a server cannot make us buffer
    /// or parse an endless header block (libcurl's own cap is far larger).
    private var headerBytes = 0
    static let maximumHeaderBytes = 64 * 1024
    private(set) var bytesWritten: Int64 = 0
    /// Set by a callback or the engine when it stops the transfer on purpose; wins over
    /// libcurl's own error code, which then only says "aborted".
    private(set) var abortReason: AttachmentDescriptor.Reason?
    /// Last time any response byte (header or body) arrived; stall detection counts from here.
    var lastActivity: ContinuousClock.Instant
    /// Stall detection starts once the connection is up (connecting has its own timeout).
    var stallArmed = false
    /// Any response byte has arrived (so the connection is certainly up).
    private(set) var receivedAnything = false
    private var firstByteAt: ContinuousClock.Instant?
    /// The URL of each response (redirects included) and the TLS facts of each https one, for
    /// the App Transport Security verdict.
    var hops: [String] = []
    var sessions: [TLSFacts] = []
    /// The caching headers of the response being received (reset by each status line).
    package private(set) var cacheHeaders = CacheHeaders()
    /// The Retry-After header of the response being received (reset by each status line).
    private var retryAfter: String?
    /// Request headers of a conditional request (curl_slist), freed with the handle.
    var requestHeaders: OpaquePointer?

    /// The engine's budget of bytes in temporary files, and this transfer's part of it.
    private let inflight: InflightBytes
    private(set) var reservation: Int64 = 0
    private var hasReservation = false
    /// Reserved as the largest limit (no length declared) until the kind is admitted.
    private var reservedForUnknownKind = false
    /// What the transfer asked for while it waits (paused) for bytes to be given back.
    private(set) var wantedReservation: Int64 = 0
    /// Since when the body waits for its reservation, and how long it waited before.
    private(set) var pausedSince: ContinuousClock.Instant?
    private var pausedFor: Duration = .zero
    /// The engine's TLS session cache, shared by its easy handles.
    package let share: CurlShare?
    /// The pipeline's clock, whose wall time a Retry-After date is read against.
    private let clock: AttachFetchClock

    /// Easy handles alive in this process (tests check that none leak).
    package static let live = Atomic<Int>(0)

    init(job: TransferJob, sniffer: MagicSniffer, inflight: InflightBytes, share: CurlShare?, clock: AttachFetchClock) throws(AttachFetchError) {
        guard let handle = curl_easy_init() else { throw .libraryInitialisation("curl_easy_init failed") }
        self.job = job
        self.clock = clock
        self.handle = handle
        self.inflight = inflight
        self.share = share
        self.admission = BodyAdmission(limits: job.spec.sizeLimits, imagesOnly: job.spec.imagesOnly,
                                       normalize: job.spec.normalize, transcode: job.spec.transcode, sniffer: sniffer)
        self.startedAt = .now
        self.lastActivity = .now
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        Self.live.add(1, ordering: .relaxed)
    }

    deinit {
        Self.live.subtract(1, ordering: .relaxed)
        curl_easy_cleanup(handle)
        if let requestHeaders { curl_slist_free_all(UnsafeMutablePointer(requestHeaders)) }
        errorBuffer.deallocate()
        if fileDescriptor >= 0 && body == nil { close(fileDescriptor) }
    }

    package static func from(_ pointer: UnsafeMutableRawPointer?) -> EasyTransfer {
        Unmanaged<EasyTransfer>.fromOpaque(pointer!).takeUnretainedValue()
    }

    /// Stops the transfer on purpose; the engine removes the handle and reports `reason`.
    func abort(_ code: ReasonCode, _ message: String) {
        if abortReason == nil { abortReason = .init(code: code, message: message) }
    }

    // MARK: Callbacks (engine thread)

    /// One header line. Content-Length is read (for the size limits and messages), and the
    /// caching headers; the status line of each response in a redirect chain resets them.
    func receiveHeader(_ line: UnsafeRawBufferPointer) -> Int {
        lastActivity = .now
        receivedAnything = true
        headerBytes += line.count
        if headerBytes > Self.maximumHeaderBytes {
            abort(.transferFailed, "the response headers exceed \(Self.maximumHeaderBytes) bytes")
            return 0
        }
        if line.starts(with: "HTTP/".utf8) {
            headerBytes = line.count
            declaredLength = nil
            cacheHeaders = CacheHeaders()
            retryAfter = nil
            recordHop()
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0, colon < 20 {
            let name = String(decoding: line[..<colon], as: UTF8.self)
            let lowered = name.lowercased()
            if lowered == "content-length" {
                declaredLength = Int64(String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            } else if lowered == "retry-after" {
                retryAfter = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            } else {
                cacheHeaders.take(name: name, value: String(decoding: line[(colon + 1)...], as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        return line.count
    }

    func receiveBody(_ chunk: UnsafeRawBufferPointer) -> Int {
        let now = ContinuousClock.now
        lastActivity = now
        if firstByteAt == nil {
            firstByteAt = now
            // FAILONERROR stops >= 400; a body of any other non-2xx answer is not media.
            if let status = CurlOption.long(handle, CURLINFO_RESPONSE_CODE), !(200..<300).contains(status) {
                abort(.httpStatus, "the server answered HTTP \(status)")
                return 0
            }
        }
        if !hasReservation {
            // Paused bodies are delivered again only after `resume`; a call before it still waits.
            if pausedSince != nil { return Int(CURL_WRITEFUNC_PAUSE) }
            let largest = job.spec.sizeLimits.largest
            wantedReservation = declaredLength.map { min(max(0, $0), largest) } ?? largest
            guard inflight.reserve(wantedReservation) else {
                pausedSince = now
                inflight.wait(self)
                return Int(CURL_WRITEFUNC_PAUSE)
            }
            took(wantedReservation)
        }
        let admitted = admit(chunk, complete: false)
        if reservedForUnknownKind, let limit = admission.admittedLimit {
            reservedForUnknownKind = false
            if limit < reservation {
                inflight.release(reservation - limit)
                reservation = limit
            }
        }
        return admitted ? chunk.count : 0
    }

    private func took(_ bytes: Int64) {
        reservation = bytes
        hasReservation = true
        reservedForUnknownKind = declaredLength == nil
    }

    /// The engine reserved `wantedReservation` for this paused transfer: the body goes on
    /// (libcurl delivers the held chunk again, maybe at once, from inside `curl_easy_pause`).
    package func resume(now: ContinuousClock.Instant) {
        took(wantedReservation)
        if let pausedSince { pausedFor += now - pausedSince }
        pausedSince = nil
        lastActivity = now
        let code = curl_easy_pause(handle, CURLPAUSE_CONT)
        if code != CURLE_OK { abort(.ioError, "libcurl could not resume the body: \(code.curlMessage)") }
    }

    /// Hands the bytes to the admission and writes what it lets through; false when the
    /// transfer must stop (`abortReason` set).
    private func admit(_ chunk: UnsafeRawBufferPointer, complete: Bool) -> Bool {
        switch admission.take(chunk, declared: declaredLength.map { ($0, "Content-Length") }, complete: complete) {
        case .hold: return true
        case .write: return write(chunk)
        case .writeHeld(let prefix): return prefix.withUnsafeBytes { write($0) }
        case .refuse(let reason):
            abort(reason.code, reason.message)
            return false
        }
    }

    /// Appends to the body file and the hash.
    private func write(_ chunk: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < chunk.count {
            let written = Glibc.write(fileDescriptor, chunk.baseAddress! + offset, chunk.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                abort(.ioError, "cannot write \(job.spec.bodyPath): \(String(cString: strerror(errno)))")
                return false
            }
            offset += written
        }
        digest.update(chunk)
        bytesWritten += Int64(chunk.count)
        inflight.wrote(Int64(chunk.count))
        return true
    }

    // MARK: Completion

    /// Turns libcurl's result into an outcome, closes the file, and removes it on failure.
    package func complete(curlCode: CURLcode?) -> TransferOutcome {
        var notModified = false
        var refusedWhole: [UInt8]?
        if let curlCode, curlCode == CURLE_OK, abortReason == nil {
            let status = CurlOption.long(handle, CURLINFO_RESPONSE_CODE)
            if status == 304, job.spec.validators != nil {
                notModified = true
            } else if let status, !(200..<300).contains(status) {
                abort(.httpStatus, "the server answered HTTP \(status)")
            } else if bytesWritten == 0 && !admission.holdsBytes {
                abort(.emptyBody, "the server sent no body")
            } else if admission.holdsBytes {
                // The whole body is held (shorter than the sniff window): a refused one is still
                // known whole, and keeps its size and hash.
                let whole = admission.heldBytes
                if !admit(UnsafeRawBufferPointer(start: nil, count: 0), complete: true) { refusedWhole = whole }
            }
        }
        var outcome = TransferOutcome()
        outcome.failure = abortReason ?? curlCode.flatMap(reason(for:))
        outcome.declaredMIME = CurlOption.string(handle, CURLINFO_CONTENT_TYPE)
        outcome.finalURL = CurlOption.string(handle, CURLINFO_EFFECTIVE_URL)
        if let connect = CurlOption.offset(handle, CURLINFO_CONNECT_TIME_T), connect > 0 {
            outcome.connectMilliseconds = Int(connect / 1000)
        }
        if let firstByte = CurlOption.offset(handle, CURLINFO_STARTTRANSFER_TIME_T), firstByte > 0 {
            outcome.firstByteMilliseconds = Int(firstByte / 1000)
        }
        // Waiting for bytes in flight is queueing too, only later than for a slot: it is counted
        // once, in `queued`, and taken out of `download` (docs/descriptor.md#timings).
        let now = ContinuousClock.now
        let waitedForBytes = pausedFor + (pausedSince.map { now - $0 } ?? .zero)
        outcome.downloadMilliseconds = Int(max(0, (now - startedAt - waitedForBytes).milliseconds))
        outcome.queuedMilliseconds = Int(max(0, (startedAt - job.queuedAt + waitedForBytes).milliseconds))
        if pausedSince != nil { inflight.stopWaiting(self) }
        pausedSince = nil
        inflight.release(reservation)
        reservation = 0
        inflight.ended(written: bytesWritten)
        outcome.mediaType = admission.type
        outcome.sniffedMIME = admission.sniffedMIME
        outcome.ats = atsVerdict(failure: outcome.failure)
        outcome.cacheHeaders = cacheHeaders
        outcome.notModified = notModified && outcome.failure == nil
        let status = CurlOption.long(handle, CURLINFO_RESPONSE_CODE) ?? 0
        outcome.httpVersion = CurlOption.long(handle, CURLINFO_HTTP_VERSION) ?? 0
        outcome.originFailure = OriginFailure.describe(outcome.failure, status: status,
                                                       osError: CurlOption.long(handle, CURLINFO_OS_ERRNO) ?? 0)
        if status > 0 { outcome.httpStatus = status }
        if status == 429 || status == 503, let retryAfter {
            outcome.retryAfter = RetryAfter.delay(retryAfter, now: Date(timeIntervalSince1970: clock.wallSeconds))
        }
        if body == nil { close(fileDescriptor) }
        fileDescriptor = -1
        if outcome.notModified {
            discardBody()
        } else if outcome.failure == nil {
            outcome.bytes = bytesWritten
            do throws(Reason) { outcome.sha256 = try digest.finalizeHex() } catch { outcome.failure = error }
        }
        if outcome.failure != nil {
            discardBody()
            if let refusedWhole {
                let hash = SHA256Digest()
                refusedWhole.withUnsafeBytes { hash.update($0) }
                if let hex = try? hash.finalizeHex() { (outcome.bytes, outcome.sha256) = (Int64(refusedWhole.count), hex) }
            }
        }
        outcome.body = body
        body = nil
        return outcome
    }

    /// Drops the body: an unnamed file is freed with its descriptor; a named one is removed.
    private func discardBody() {
        if body != nil { body = nil } else { unlink(job.spec.bodyPath) }
    }
}
