internal import CLibcrypto

/// Incremental SHA-256 over OpenSSL's EVP interface (hardware accelerated where the CPU has it).
/// Owns one `EVP_MD_CTX`; used by one thread at a time, so it is not Sendable. Every EVP call's
/// result is checked: the first failure is kept and reported by `finalizeHex()`.
package final class SHA256Digest {
    private let context: OpaquePointer
    private var failure: Reason?

    package init() {
        // EVP_MD_CTX_new only fails when out of memory.
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed: out of memory") }
        self.context = context
        if EVP_DigestInit_ex(context, EVP_sha256(), nil) != 1 { failure = Self.failure("EVP_DigestInit_ex") }
    }

    deinit { EVP_MD_CTX_free(context) }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, let base = bytes.baseAddress, bytes.count > 0 else { return }
        if EVP_DigestUpdate(context, base, bytes.count) != 1 { failure = Self.failure("EVP_DigestUpdate") }
    }

    /// Lower-case hex of the digest. Call once.
    package func finalizeHex() throws(Reason) -> String {
        if let failure { throw failure }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1 else { throw Self.failure("EVP_DigestFinal_ex") }
        let hexDigits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(Int(length) * 2)
        for byte in digest.prefix(Int(length)) {
            hex.append(hexDigits[Int(byte >> 4)])
            hex.append(hexDigits[Int(byte & 0x0f)])
        }
        return String(decoding: hex, as: UTF8.self)
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
        var text = [CChar](repeating: 0, count: 256)
        let code = ERR_get_error()
        if code != 0 { ERR_error_string_n(code, &text, text.count) }
        let detail = code != 0 ? String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "no detail"
        return Reason(code: .ioError, message: "OpenSSL's \(call) failed: \(detail)")
    }
}
