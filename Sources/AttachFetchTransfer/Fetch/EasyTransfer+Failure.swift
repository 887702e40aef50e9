internal import CCurl

extension EasyTransfer {
    /// The one mapping of a libcurl result to the descriptor's reason, with curl's own message
    /// (its error buffer, else `curl_easy_strerror`).
    package func reason(for code: CURLcode) -> AttachmentDescriptor.Reason? {
        let detail = errorBuffer.pointee != 0 ? String(cString: errorBuffer) : code.curlMessage
        switch code {
        case CURLE_OK:
            return nil
        case CURLE_HTTP_RETURNED_ERROR:
            let status = CurlOption.long(handle, CURLINFO_RESPONSE_CODE) ?? 0
            return .init(code: .httpStatus, message: "the server answered HTTP \(status)")
        case CURLE_OPERATION_TIMEDOUT:
            return .init(code: .timeout, message: detail)
        case CURLE_TOO_MANY_REDIRECTS:
            return .init(code: .tooManyRedirects, message: detail)
        case CURLE_UNSUPPORTED_PROTOCOL:
            // Also raised for a garbled response (e.g. "HTTP/0.9"); only a redirect to another
            // scheme is a scheme problem.
            let target = CurlOption.string(handle, CURLINFO_REDIRECT_URL) ?? CurlOption.string(handle, CURLINFO_EFFECTIVE_URL) ?? ""
            let scheme = target.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() } ?? ""
            return scheme == "http" || scheme == "https"
                ? .init(code: .transferFailed, message: detail)
                : .init(code: .unsupportedScheme, message: detail)
        case CURLE_URL_MALFORMAT:
            return .init(code: .invalidURL, message: detail)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_PROXY:
            return .init(code: .connectFailed, message: detail)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
             CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE, CURLE_USE_SSL_FAILED:
            // The verifier's or the handshake's own words ("certificate has expired").
            return .init(code: .tlsFailed, message: detail)
        case CURLE_FILESIZE_EXCEEDED:
            let declared = declaredLength.map(String.init) ?? "(unknown)"
            return .init(code: .sizeLimitExceeded,
                         message: "Content-Length \(declared) exceeds the largest limit of \(job.spec.sizeLimits.largest) bytes")
        default:
            return .init(code: .transferFailed, message: detail)
        }
    }
}
