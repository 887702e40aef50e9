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
}
