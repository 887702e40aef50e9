internal import CCurl

/// Refuses what is not worth a request: malformed URLs and schemes other than http(s).
/// Redirect hops are held to the same schemes by libcurl (CURLOPT_REDIR_PROTOCOLS_STR).
package enum URLCheck {
    package static func problem(with url: String) -> AttachmentDescriptor.Reason? {
        guard !url.isEmpty else { return .init(code: .invalidURL, message: "the URL is empty") }
        guard !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            return .init(code: .invalidURL, message: "the URL contains spaces or control characters")
        }
        guard let colon = url.firstIndex(of: ":"), let scheme = Optional(url[..<colon]), isScheme(scheme) else {
            return .init(code: .invalidURL, message: "the URL has no scheme; use http:// or https://")
        }
        let lowered = scheme.lowercased()
        guard lowered == "http" || lowered == "https" else {
            return .init(code: .unsupportedScheme, message: "the scheme \(lowered) is not allowed; only http and https are")
        }
        switch host(of: url) {
        case .failure(let reason): return reason
        case .success(let host): return host.isEmpty ? .init(code: .invalidURL, message: "the URL has no host") : nil
        }
    }

    /// Through a proxy the open-socket check sees only the proxy's address, so a URL whose host
    /// is a literal address is held to the policy here, before anything is sent.
    package static func literalHostRefusal(_ url: String, policy: AddressPolicy) -> Reason? {
        guard case .success(var text) = host(of: url) else { return nil }
        if text.hasPrefix("[") && text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        return policy.refusal(for: text).map {
            .init(code: .forbiddenAddress, message: "\($0) (refused before asking the proxy)")
        }
    }

    /// The URL's host as libcurl's own parser reads it, so that what we accept and check is
    /// exactly what it will request (IPv6 literals keep their brackets).
    private static func host(of url: String) -> Result<String, Reason> {
        guard let parsed = curl_url() else { return .failure(.init(code: .ioError, message: "curl_url: out of memory")) }
        defer { curl_url_cleanup(parsed) }
        let code = curl_url_set(parsed, CURLUPART_URL, url, 0)
        guard code == CURLUE_OK else {
            return .failure(.init(code: .invalidURL, message: "the URL cannot be parsed: \(String(cString: curl_url_strerror(code)))"))
        }
        var host: UnsafeMutablePointer<CChar>?
        guard curl_url_get(parsed, CURLUPART_HOST, &host, 0) == CURLUE_OK, let host else {
            return .failure(.init(code: .invalidURL, message: "the URL has no host"))
        }
        defer { curl_free(host) }
        return .success(String(cString: host))
    }

    /// The URL's origin for per-host limits: scheme, host and port as written, lowercased,
    /// without user information (cheap, no allocation of a parser: it runs per request; a URL
    /// that is not of this shape is refused by `problem(with:)` before a transfer is made).
    package static func origin(of url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url.lowercased() }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostAndPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        return (url[..<schemeEnd.upperBound] + hostAndPort).lowercased()
    }

    /// Plain http (what App Transport Security refuses, and where no ALPN says a connection
    /// may be shared).
    static func isPlainHTTP(_ url: String) -> Bool {
        url.prefix(7).lowercased() == "http://"
    }

    /// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
    private static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.unicodeScalars.first, first.isASCIILetter else { return false }
        return text.unicodeScalars.allSatisfy { $0.isASCIILetter || ("0"..."9").contains($0) || $0 == "+" || $0 == "-" || $0 == "." }
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}
