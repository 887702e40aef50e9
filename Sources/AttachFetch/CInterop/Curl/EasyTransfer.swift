internal import CCurl
internal import CAttachFetchShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One running download: owns its curl easy handle, the body file's descriptor and the
/// running hash. Lives on the engine thread only (libcurl calls its callbacks there), so it is
/// deliberately not Sendable.
final class EasyTransfer {
    let job: TransferJob
    let handle: UnsafeMutableRawPointer
    let startedAt: ContinuousClock.Instant
    private let sniffer: MagicSniffer
    let errorBuffer: UnsafeMutablePointer<CChar>
    private var fileDescriptor: Int32 = -1
    private var sniffBuffer: [UInt8] = []
    private let digest = SHA256Digest()

    private(set) var mediaType: MediaType?
    private(set) var sniffedMIME: String?
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
    private(set) var cacheHeaders = CacheHeaders()
    /// Request headers of a conditional request (curl_slist), freed with the handle.
    private var requestHeaders: OpaquePointer?

    /// Easy handles alive in this process (tests check that none leak).
    static let live = Atomic<Int>(0)

    init(job: TransferJob, sniffer: MagicSniffer) throws(AttachFetchError) {
        guard let handle = curl_easy_init() else { throw .libraryInitialisation("curl_easy_init failed") }
        self.job = job
        self.handle = handle
        self.sniffer = sniffer
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
        if fileDescriptor >= 0 { close(fileDescriptor) }
    }

    /// Opens the body file and sets every option. Returns a failure to report instead of
    /// starting, or nil when the handle is ready to add to the multi handle.
    func prepare() -> AttachmentDescriptor.Reason? {
        let spec = job.spec
        let remaining = spec.deadline - .now
        guard remaining > .milliseconds(1) else {
            return .init(code: .deadlineExceeded, message: "the batch deadline passed before the request could start")
        }
        fileDescriptor = open(spec.bodyPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fileDescriptor >= 0 else {
            return .init(code: .ioError, message: "cannot create \(spec.bodyPath): \(String(cString: strerror(errno)))")
        }
        // libcurl's timeouts are the request's own; the deadline, which shared work may move
        // later while the transfer runs, is enforced by the engine (`enforceLimits`).
        let totalTimeout = spec.timeout.request
        let connectTimeout = spec.timeout.connect
        let me = Unmanaged.passUnretained(self).toOpaque()

        // The URL is the caller's input: libcurl refusing it is the URL's fault.
        let urlCode = CurlOption.set(handle, CURLOPT_URL, spec.url)
        guard urlCode == CURLE_OK else {
            return .init(code: .invalidURL, message: "libcurl refused the URL: \(urlCode.curlMessage)")
        }
        var codes: [CURLcode] = [
            CurlOption.set(handle, CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer)),
            // Threads: never let libcurl use signals for timeouts.
            CurlOption.set(handle, CURLOPT_NOSIGNAL, 1),
            CurlOption.set(handle, CURLOPT_PROTOCOLS_STR, "http,https"),
            CurlOption.set(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"),
            CurlOption.set(handle, CURLOPT_FOLLOWLOCATION, 1),
            CurlOption.set(handle, CURLOPT_MAXREDIRS, spec.maxRedirects),
            // Status >= 400 ends the transfer before any body is written.
            CurlOption.set(handle, CURLOPT_FAILONERROR, 1),
            CurlOption.set(handle, CURLOPT_CONNECTTIMEOUT_MS, connectTimeout.timeoutMilliseconds),
            CurlOption.set(handle, CURLOPT_TIMEOUT_MS, totalTimeout.timeoutMilliseconds),
            // A declared length above every limit is refused before the body is read.
            CurlOption.set(handle, CURLOPT_MAXFILESIZE_LARGE, offset: spec.sizeLimits.largest),
            CurlOption.set(handle, CURLOPT_USERAGENT, "attach-fetch/0.1"),
            // Credentials from the URL go to the URL's own host only, never to a redirect target
            // on another host (libcurl's default, stated so it cannot drift).
            CurlOption.set(handle, CURLOPT_UNRESTRICTED_AUTH, 0),
            // Never http_proxy and friends from the environment: a proxy makes the address
            // checked the proxy's. Only the configured one, tunnelling (CONNECT) even for http.
            CurlOption.set(handle, CURLOPT_PROXY, spec.proxy ?? ""),
            CurlOption.set(handle, CURLOPT_HTTPPROXYTUNNEL, spec.proxy == nil ? 0 : 1),
            // TLS 1.2 at least: what iOS requires of media servers (App Transport Security).
            CurlOption.set(handle, CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2)),
            // https: wait for a connection that may be multiplexed (HTTP/2, known from ALPN
            // once its handshake is done) rather than open another one per transfer: many media
            // URLs share a CDN host. Never for plain http, where nothing tells libcurl a
            // connection can be shared, and a server that stalls would hold every transfer
            // to its host behind the first.
            CurlOption.set(handle, CURLOPT_PIPEWAIT, URLCheck.isPlainHTTP(spec.url) ? 0 : 1),
            CurlOption.set(handle, CURLOPT_WRITEDATA, pointer: me),
            CurlOption.set(handle, CURLOPT_HEADERDATA, pointer: me),
            CurlOption.set(handle, CURLOPT_OPENSOCKETDATA, pointer: me),
        ]
        if let trustStore = spec.trustStore { codes.append(trustStore.apply(to: handle)) }
        if let validators = spec.validators {
            for line in validators.requestHeaders {
                guard let list = curl_slist_append(requestHeaders.map { UnsafeMutablePointer($0) }, line) else {
                    return .init(code: .ioError, message: "curl_slist_append failed (out of memory)")
                }
                requestHeaders = OpaquePointer(list)
            }
            codes.append(CurlOption.set(handle, CURLOPT_HTTPHEADER, pointer: requestHeaders.map { UnsafeMutableRawPointer($0) }))
        }
        // No CURLOPT_ACCEPT_ENCODING: compressed bodies are never requested nor decoded, so a
        // body's bytes on disk are the bytes counted against the limit.
        codes.append(af_curl_easy_setopt_write_function(handle, CURLOPT_WRITEFUNCTION) { data, size, count, me in
            EasyTransfer.from(me).receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
        })
        codes.append(af_curl_easy_setopt_write_function(handle, CURLOPT_HEADERFUNCTION) { data, size, count, me in
            EasyTransfer.from(me).receiveHeader(UnsafeRawBufferPointer(start: data, count: size * count))
        })
        codes.append(af_curl_easy_setopt_opensocket_function(handle) { me, _, address in
            EasyTransfer.from(me).openSocket(address!)
        })
        // Any other option refused is our fault or the library's (an option this libcurl lacks):
        // an internal error, reported as `ioError` with curl's text.
        if let failed = codes.first(where: { $0 != CURLE_OK }) {
            return .init(code: .ioError, message: "libcurl refused an option (an internal error): \(failed.curlMessage)")
        }
        return nil
    }

    private static func from(_ pointer: UnsafeMutableRawPointer?) -> EasyTransfer {
        Unmanaged<EasyTransfer>.fromOpaque(pointer!).takeUnretainedValue()
    }

    /// Stops the transfer on purpose; the engine removes the handle and reports `reason`.
    func abort(_ code: ReasonCode, _ message: String) {
        if abortReason == nil { abortReason = .init(code: code, message: message) }
    }

    // MARK: Callbacks (engine thread)

    /// One header line. Content-Length is read (for the size limits and messages), and the
    /// caching headers; the status line of each response in a redirect chain resets them.
    private func receiveHeader(_ line: UnsafeRawBufferPointer) -> Int {
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
            recordHop()
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0, colon < 20 {
            let name = String(decoding: line[..<colon], as: UTF8.self)
            if name.lowercased() == "content-length" {
                declaredLength = Int64(String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            } else {
                cacheHeaders.take(name: name, value: String(decoding: line[(colon + 1)...], as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        return line.count
    }

    private func receiveBody(_ chunk: UnsafeRawBufferPointer) -> Int {
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
        if mediaType == nil {
            sniffBuffer.append(contentsOf: chunk)
            switch decideType(complete: false) {
            case .waiting: return chunk.count
            case .stopped: return 0
            case .decided: break
            }
            let buffered = sniffBuffer
            sniffBuffer = []
            return buffered.withUnsafeBytes { store($0) } ? chunk.count : 0
        }
        return store(chunk) ? chunk.count : 0
    }

    private enum TypeDecision { case waiting, decided, stopped }

    /// Sniffs the buffered prefix's fixed window and applies the table and the kind's limit.
    /// `.stopped` (with `abortReason` set) when the transfer must stop; `.waiting` until the
    /// window has arrived (never when `complete`).
    private func decideType(complete: Bool) -> TypeDecision {
        let sniffed: String
        switch sniffBuffer.withUnsafeBytes({
            SniffWindow.decide($0, complete: complete, maxLookahead: Int(job.spec.sizeLimits.audio), sniffer: sniffer)
        }) {
        case .needMore:
            return .waiting
        case .sniffed(let mime, _):
            sniffed = mime
            sniffedMIME = mime
        case .refused(let code, let message):
            abort(code, message)
            return .stopped
        }
        switch MediaPolicy.admit(sniffed: sniffed, size: declaredLength.map { ($0, "Content-Length") },
                                 limits: job.spec.sizeLimits, imagesOnly: job.spec.imagesOnly,
                                 normalize: job.spec.normalize) {
        case .success(let type):
            mediaType = type
        case .failure(let reason):
            // The kind is known even when its size is refused: keep it for the descriptor.
            if reason.code == .sizeLimitExceeded {
                mediaType = MediaType.forSniffedMIME(sniffed) ?? MediaType.convertibleForSniffedMIME(sniffed)
            }
            abort(reason.code, reason.message)
            return .stopped
        }
        return .decided
    }

    /// Appends to the body file and the hash, enforcing the kind's limit as bytes arrive.
    private func store(_ chunk: UnsafeRawBufferPointer) -> Bool {
        guard let type = mediaType else { return false }
        let limit = MediaPolicy.streamingLimit(for: type, limits: job.spec.sizeLimits, normalize: job.spec.normalize)
        if bytesWritten + Int64(chunk.count) > limit {
            abort(.sizeLimitExceeded,
                  "the body grew past the \(MediaPolicy.limitName(type, normalize: job.spec.normalize)) limit of \(limit) bytes")
            return false
        }
        var offset = 0
        while offset < chunk.count {
            let written = write(fileDescriptor, chunk.baseAddress! + offset, chunk.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                abort(.ioError, "cannot write \(job.spec.bodyPath): \(String(cString: strerror(errno)))")
                return false
            }
            offset += written
        }
        digest.update(chunk)
        bytesWritten += Int64(chunk.count)
        return true
    }

    // MARK: Completion

    /// Turns libcurl's result into an outcome, closes the file, and removes it on failure.
    func complete(curlCode: CURLcode?) -> TransferOutcome {
        var notModified = false
        if let curlCode, curlCode == CURLE_OK, abortReason == nil {
            let status = CurlOption.long(handle, CURLINFO_RESPONSE_CODE)
            if status == 304, job.spec.validators != nil {
                notModified = true
            } else if let status, !(200..<300).contains(status) {
                abort(.httpStatus, "the server answered HTTP \(status)")
            } else if bytesWritten == 0 && sniffBuffer.isEmpty {
                abort(.emptyBody, "the server sent no body")
            } else if mediaType == nil, decideType(complete: true) == .decided {
                let buffered = sniffBuffer
                sniffBuffer = []
                _ = buffered.withUnsafeBytes { store($0) }
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
        outcome.downloadMilliseconds = startedAt.millisecondsElapsed
        outcome.queuedMilliseconds = Int(max(0, (startedAt - job.queuedAt).milliseconds))
        outcome.mediaType = mediaType
        outcome.sniffedMIME = sniffedMIME
        outcome.ats = atsVerdict(failure: outcome.failure)
        outcome.cacheHeaders = cacheHeaders
        outcome.notModified = notModified && outcome.failure == nil
        close(fileDescriptor)
        fileDescriptor = -1
        if outcome.notModified {
            unlink(job.spec.bodyPath)
        } else if outcome.failure == nil {
            outcome.bytes = bytesWritten
            do throws(Reason) { outcome.sha256 = try digest.finalizeHex() } catch { outcome.failure = error }
        }
        if outcome.failure != nil {
            unlink(job.spec.bodyPath)
        }
        return outcome
    }
}
