internal import CLibcrypto

/// Reads PEM text with OpenSSL's own parser, so that a CA file is judged the way the TLS
/// library that will use it judges it.
package enum PEMCertificates {
    /// How many X.509 certificates `pem` holds (0 when none parse).
    package static func count(in pem: String) -> Int {
        var bytes = Array(pem.utf8)
        guard !bytes.isEmpty else { return 0 }
        return bytes.withUnsafeMutableBytes { buffer -> Int in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return 0 }
            defer { BIO_free(bio) }
            var found = 0
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                X509_free(certificate)
                found += 1
            }
            // The loop ends on "no more PEM data": an expected error, not one to leave queued.
            ERR_clear_error()
            return found
        }
    }
}
