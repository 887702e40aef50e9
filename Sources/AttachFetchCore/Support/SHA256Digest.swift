internal import EncryptedContent

/// Incremental SHA-256 over OpenSSL's EVP interface (hardware accelerated where the CPU has it),
/// on the codec's `SHA256Context`, the one owner of the EVP context. Used by one thread at a
/// time, so it is not Sendable. The first failure is kept and reported by `finalizeHex()`.
package final class SHA256Digest {
    private let context: SHA256Context?
    private var failure: Reason?

    package init() {
        context = SHA256Context()
        if context == nil { failure = Self.failure("EVP_DigestInit_ex") }
    }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, let context else { return }
        if !context.update(bytes) { failure = Self.failure("EVP_DigestUpdate") }
    }

    /// Lower-case hex of the digest. Call once.
    package func finalizeHex() throws(Reason) -> String {
        if let failure { throw failure }
        guard let digest = context?.finish() else { throw Self.failure("EVP_DigestFinal_ex") }
        return Hex.lowercase(digest)
    }

    /// The lower-case hex SHA-256 of `bytes` held in memory, in one call.
    package static func hex(of bytes: [UInt8]) throws(Reason) -> String {
        let digest = SHA256Digest()
        bytes.withUnsafeBytes { digest.update($0) }
        return try digest.finalizeHex()
    }

    /// The one mapping of an OpenSSL failure: its error queue's text. Hashing fails only when
    /// the machine or the library does, never because of the media: `ioError`.
    package static func failure(_ call: String) -> Reason {
        Reason(code: .ioError, message: "OpenSSL's \(call) failed: \(OpenSSLError.text())")
    }
}
