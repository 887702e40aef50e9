internal import CMagic

/// Decides a body's type from its bytes with libmagic. One `magic_t` per instance; libmagic
/// handles are not thread-safe, so this class is not Sendable: each thread that sniffs owns one.
package final class MagicSniffer {
    private let cookie: magic_t

    package init() throws(AttachFetchError) {
        // MAGIC_MIME_TYPE: answer "image/jpeg", not prose. MAGIC_NO_CHECK_COMPRESS: never look
        // inside compressed data (no decompression of untrusted input just to name it).
        guard let cookie = magic_open(MAGIC_MIME_TYPE | MAGIC_NO_CHECK_COMPRESS) else {
            throw .libraryInitialisation("magic_open failed: out of memory")
        }
        guard magic_load(cookie, nil) == 0 else {
            let failure = Self.failure(cookie, "magic_load")
            magic_close(cookie)
            throw .libraryInitialisation(failure.message)
        }
        self.cookie = cookie
    }

    deinit { magic_close(cookie) }

    /// The MIME type libmagic gives these bytes.
    package func mimeType(of bytes: UnsafeRawBufferPointer) -> Result<String, Reason> {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .success("application/x-empty") }
        guard let answer = magic_buffer(cookie, base, bytes.count) else { return .failure(Self.failure(cookie, "magic_buffer")) }
        return .success(String(cString: answer))
    }

    /// The one mapping of a libmagic failure: `magic_error`'s text. Bytes libmagic cannot type
    /// cannot be shown either: `unsupportedType`.
    private static func failure(_ cookie: magic_t, _ call: String) -> Reason {
        let message = magic_error(cookie).map { String(cString: $0) } ?? "unknown error"
        return Reason(code: .unsupportedType, message: "libmagic (\(call)): \(message)")
    }
}
