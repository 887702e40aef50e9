internal import CCurlShims
internal import CCurl
internal import CLibcrypto

/// What a device would see of one TLS connection: protocol, cipher, and the weakest parts of
/// the certificate chain the server sent. Read from the OpenSSL session libcurl negotiated.
struct TLSFacts: Sendable, Equatable {
    /// OpenSSL's name for the protocol: "TLSv1.3", "TLSv1.2", ...
    package var version: String
    /// OpenSSL's name for the cipher suite: "ECDHE-RSA-AES128-GCM-SHA256", "AES128-SHA", ...
    var cipher: String
    /// ECDHE key exchange, or TLS 1.3 (always ephemeral): what ATS calls forward secrecy.
    var forwardSecret: Bool
    /// The signature algorithm of a certificate signed with SHA-1 (or MD5), if any.
    var weakSignature: String?
    /// A key below ATS's sizes (RSA 2048, ECC 256 bits), described, if any.
    var smallKey: String?
}

enum TLSSession {
    /// The facts of `handle`'s current connection, or nil when it is not TLS over OpenSSL.
    package static func facts(_ handle: UnsafeMutableRawPointer) -> TLSFacts? {
        var pointer: UnsafeMutableRawPointer?
        guard af_curl_easy_getinfo_pointer(handle, CURLINFO_TLS_SSL_PTR, &pointer) == CURLE_OK, let pointer else { return nil }
        let info = pointer.assumingMemoryBound(to: curl_tlssessioninfo.self).pointee
        guard info.backend == CURLSSLBACKEND_OPENSSL, let internals = info.internals else { return nil }
        let ssl = OpaquePointer(internals)
        guard let cipher = SSL_get_current_cipher(ssl), let version = SSL_get_version(ssl) else { return nil }
        let exchange = SSL_CIPHER_get_kx_nid(cipher)
        var facts = TLSFacts(version: String(cString: version),
                             cipher: SSL_CIPHER_get_name(cipher).map { String(cString: $0) } ?? "unknown",
                             forwardSecret: exchange == NID_kx_ecdhe || exchange == NID_kx_ecdhe_psk || exchange == NID_kx_any)
        if let chain = SSL_get_peer_cert_chain(ssl) {
            let stack = chain
            for index in 0..<max(0, OPENSSL_sk_num(stack)) {
                guard let raw = OPENSSL_sk_value(stack, index) else { continue }
                inspect(OpaquePointer(raw), into: &facts)
            }
        }
        return facts
    }

    /// One certificate's signature (unless self-signed: a root's own signature is not checked)
    /// and key size.
    private static func inspect(_ certificate: OpaquePointer, into facts: inout TLSFacts) {
        let selfSigned = X509_check_issued(certificate, certificate) == X509_V_OK
        let signature = X509_get_signature_nid(certificate)
        if !selfSigned, [NID_sha1WithRSAEncryption, NID_ecdsa_with_SHA1, NID_dsaWithSHA1, NID_md5WithRSAEncryption].contains(signature) {
            facts.weakSignature = facts.weakSignature ?? OBJ_nid2sn(signature).map { String(cString: $0) } ?? "SHA-1"
        }
        guard let key = X509_get0_pubkey(certificate) else { return }
        let bits = EVP_PKEY_get_bits(key)
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA where bits < 2048: facts.smallKey = facts.smallKey ?? "an RSA key of \(bits) bits"
        case EVP_PKEY_EC where bits < 256: facts.smallKey = facts.smallKey ?? "an ECC key of \(bits) bits"
        default: break
        }
    }
}
