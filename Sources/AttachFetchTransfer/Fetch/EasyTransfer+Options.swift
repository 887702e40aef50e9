internal import CCurl
internal import CCurlShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension EasyTransfer {
    /// Opens the body file and sets every option. Returns a failure to report instead of
    /// starting, or nil when the handle is ready to add to the multi handle. `now` is the
    /// pipeline's clock's reading, which the deadline is an instant of.
    package func prepare(now: ContinuousClock.Instant) -> AttachmentDescriptor.Reason? {
        let spec = job.spec
        let remaining = spec.deadline - now
        guard remaining > .milliseconds(1) else {
            return .init(code: .deadlineExceeded, message: "the batch deadline passed before the request could start")
        }
        // Read-only by its mode: a decoder worker that reads it cannot reopen it for writing.
        if let directory = spec.bodyDirectory, let unnamed = UnnamedFile.create(in: directory, mode: UnnamedFile.readOnlyMode) {
            body = unnamed
            fileDescriptor = unnamed.descriptor
        } else {
            fileDescriptor = open(spec.bodyPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fileDescriptor >= 0 else {
                return .init(code: .ioError, message: "cannot create \(spec.bodyPath): \(String(cString: strerror(errno)))")
            }
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
            CurlOption.set(handle, CURLOPT_USERAGENT, Release.userAgent),
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
        if let share { codes.append(CurlOption.set(handle, CURLOPT_SHARE, pointer: share.handle)) }
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
}
