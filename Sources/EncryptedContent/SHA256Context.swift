#if canImport(CLibcrypto) && !canImport(CryptoKit) && !SWIFT_CRYPTO
import CLibcrypto

/// One streaming SHA-256 on OpenSSL's libcrypto (`EVP_MD_CTX`, freed with this object): the
/// one both the codec's hash (`ContentCrypto.SHA256Stream`) and the pipeline's
/// (`AttachFetchCore`'s `SHA256Digest`) are built on, each reporting a failure its own way
/// (`OpenSSLError.text()` says what OpenSSL said). Used by one thread at a time.
package final class SHA256Context {
    private let handle: OpaquePointer

    /// nil when OpenSSL cannot make one: out of memory, or no SHA-256.
    package init?() {
        guard let handle = EVP_MD_CTX_new() else { return nil }
        self.handle = handle
        guard EVP_DigestInit_ex(handle, EVP_sha256(), nil) == 1 else { return nil }
    }

    private init?(copying other: SHA256Context) {
        guard let handle = EVP_MD_CTX_new() else { return nil }
        self.handle = handle
        guard EVP_MD_CTX_copy_ex(handle, other.handle) == 1 else { return nil }
    }

    deinit { EVP_MD_CTX_free(handle) }

    /// Another context that goes on from where this one is.
    package func copy() -> SHA256Context? { SHA256Context(copying: self) }

    /// False when OpenSSL fails.
    package func update(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return true }
        return EVP_DigestUpdate(handle, base, bytes.count) == 1
    }

    /// The 32-byte digest, which ends this context; nil when OpenSSL fails.
    package func finish() -> [UInt8]? {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(handle, &digest, &length) == 1, length == 32 else { return nil }
        return digest
    }
}

/// OpenSSL's error queue, in words.
package enum OpenSSLError {
    /// The text of the oldest error queued (and takes it off the queue); "no detail" if none.
    package static func text() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "no detail" }
        var text = [UInt8](repeating: 0, count: 256)
        text.withUnsafeMutableBufferPointer { ERR_error_string_n(code, UnsafeMutableRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), $0.count) }
        return String(decoding: text.prefix { $0 != 0 }, as: UTF8.self)
    }
}
#endif
