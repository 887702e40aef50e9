internal import CCurl
#if canImport(Glibc)
import Glibc
#endif

extension EasyTransfer {
    /// CURLOPT_OPENSOCKETFUNCTION sees every resolved address before libcurl connects to it,
    /// so names that resolve to, or redirects that lead to, a forbidden address are caught.
    func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        let family = address.pointee.family
        let sockaddrPointer = UnsafeRawPointer(address) + MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr)!
        guard let (bytes, text) = AddressClassifier.address(sockaddr: sockaddrPointer, family: family) else {
            abort(.forbiddenAddress, "address family \(family) is not IPv4 or IPv6")
            return CURL_SOCKET_BAD
        }
        if let refusal = job.spec.addressPolicy.refusal(address: bytes, text: text) {
            abort(.forbiddenAddress, refusal)
            return CURL_SOCKET_BAD
        }
        return socket(family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
    }

    /// A response began: note its URL and, on https, what its TLS session shows. Once per hop
    /// (a 1xx interim response on the same URL adds nothing new).
    func recordHop() {
        guard let url = CurlOption.string(handle, CURLINFO_EFFECTIVE_URL), hops.last != url else { return }
        hops.append(url)
        if !URLCheck.isPlainHTTP(url), let facts = TLSSession.facts(handle) { sessions.append(facts) }
    }

    /// The App Transport Security verdict on what this transfer saw.
    /// Nil when nothing was seen to judge (no response, no handshake failure, an https URL).
    func atsVerdict(failure: Reason?) -> ATSVerdict? {
        guard !hops.isEmpty || failure?.code == .tlsFailed || URLCheck.isPlainHTTP(job.spec.url) else { return nil }
        return ATSCheck.verdict(url: job.spec.url, hops: hops, sessions: sessions,
                         tlsFailure: failure?.code == .tlsFailed ? failure : nil,
                         verifyResult: failure?.code == .tlsFailed ? CurlOption.long(handle, CURLINFO_SSL_VERIFYRESULT) : nil)
    }
}
