#if canImport(CLibcrypto) && !canImport(CryptoKit) && !SWIFT_CRYPTO
import CLibcrypto

/// The primitives the codec is built from, on OpenSSL's libcrypto: on Linux the pipeline links
/// it already (libcurl's TLS, the hashes of `AttachFetchCore`), so the codec brings no second
/// crypto library, and builds in seconds rather than compiling BoringSSL. Apple platforms use
/// `ContentCrypto.swift` (CryptoKit); both pass the same published test vectors
/// (`Tests/ContentCryptoCheck`).
///
/// HKDF, HMAC and SHA-256 cannot fail on valid input: a failure there means libcrypto lacks
/// SHA-256 or memory ran out, and stops the process with OpenSSL's own message, as CryptoKit's
/// API (which does not throw for these) would.
enum ContentCrypto {
    /// RFC 5869 HKDF with SHA-256 (OpenSSL's EVP_KDF "HKDF"), `count` (at most 255 × 32) bytes.
    static func hkdfSHA256(key: [UInt8], salt: [UInt8], info: [UInt8], count: Int) -> [UInt8] {
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else { fail("EVP_KDF_fetch(HKDF)") }
        let context = EVP_KDF_CTX_new(kdf)
        EVP_KDF_free(kdf)
        guard let context else { fail("EVP_KDF_CTX_new") }
        defer { EVP_KDF_CTX_free(context) }
        var digest = Array("SHA256".utf8CString)
        var key = key, salt = salt, info = info
        var output = [UInt8](repeating: 0, count: count)
        // OSSL_PARAM keeps the name pointers: static strings, alive for the whole call.
        let status = digest.withUnsafeMutableBufferPointer { digest in
            key.withUnsafeMutableBytes { key in
                salt.withUnsafeMutableBytes { salt in
                    info.withUnsafeMutableBytes { info in
                        var parameters = [
                            OSSL_PARAM_construct_utf8_string(name("digest"), digest.baseAddress, 0),
                            OSSL_PARAM_construct_octet_string(name("key"), key.baseAddress, key.count),
                            OSSL_PARAM_construct_octet_string(name("salt"), salt.baseAddress, salt.count),
                            OSSL_PARAM_construct_octet_string(name("info"), info.baseAddress, info.count),
                            OSSL_PARAM_construct_end(),
                        ]
                        return EVP_KDF_derive(context, &output, count, &parameters)
                    }
                }
            }
        }
        guard status == 1 else { fail("EVP_KDF_derive(HKDF)") }
        return output
    }

    /// HMAC-SHA-256 of `message` under `key`: 32 bytes.
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length = 0
        guard EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, key, key.count, message, message.count, &output, 32, &length) != nil,
              length == 32 else { fail("EVP_Q_mac(HMAC-SHA256)") }
        return output
    }

    /// AES-128-GCM with a 12-byte nonce: the ciphertext followed by the 16-byte tag; nil if the
    /// key or nonce has the wrong length or the cipher refuses.
    static func sealAES128GCM(key: [UInt8], nonce: [UInt8], plaintext: [UInt8]) -> [UInt8]? {
        guard key.count == 16, nonce.count == 12, let cipher = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(cipher) }
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        let sealed = output.withUnsafeMutableBufferPointer { output -> Bool in
            guard EVP_EncryptInit_ex(cipher, EVP_aes_128_gcm(), nil, key, nonce) == 1,
                  update(plaintext, into: output.baseAddress!, with: { EVP_EncryptUpdate(cipher, $0, $1, $2, $3) }) else { return false }
            var last: Int32 = 0
            // GCM writes nothing here; the tag is read after it.
            return EVP_EncryptFinal_ex(cipher, output.baseAddress! + plaintext.count, &last) == 1 && last == 0
                && EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_AEAD_GET_TAG, 16, output.baseAddress! + plaintext.count) == 1
        }
        return sealed ? output : nil
    }

    /// The plaintext of `sealed` (ciphertext and tag), or nil when it fails authentication.
    /// `sealed` is emptied once decrypted, so that a record is held at most twice.
    static func openAES128GCM(key: [UInt8], nonce: [UInt8], sealed: inout [UInt8]) -> [UInt8]? {
        guard key.count == 16, nonce.count == 12, sealed.count >= 16, let cipher = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(cipher) }
        let length = sealed.count - 16
        var tag = Array(sealed[length...])
        var output = [UInt8](repeating: 0, count: max(length, 1))
        let opened = output.withUnsafeMutableBufferPointer { output -> Bool in
            guard EVP_DecryptInit_ex(cipher, EVP_aes_128_gcm(), nil, key, nonce) == 1,
                  update(sealed[..<length], into: output.baseAddress!, with: { EVP_DecryptUpdate(cipher, $0, $1, $2, $3) }),
                  EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_AEAD_SET_TAG, 16, &tag) == 1 else { return false }
            var last: Int32 = 0
            // Fails when the tag does not authenticate the ciphertext.
            return EVP_DecryptFinal_ex(cipher, output.baseAddress! + length, &last) == 1 && last == 0
        }
        sealed = []
        guard opened else { return nil }
        output.removeLast(output.count - length)
        return output
    }

    /// SHA-256 over a stream; a copy goes on from where the original was (the context is
    /// copied before a shared one is changed).
    struct SHA256Stream {
        private var context: SHA256Context = {
            guard let context = SHA256Context() else { ContentCrypto.fail("EVP_DigestInit_ex(SHA256)") }
            return context
        }()

        mutating func update(_ bytes: [UInt8]) {
            if !isKnownUniquelyReferenced(&context) {
                guard let copy = context.copy() else { ContentCrypto.fail("EVP_MD_CTX_copy_ex") }
                context = copy
            }
            guard bytes.withUnsafeBytes(context.update) else { ContentCrypto.fail("EVP_DigestUpdate(SHA256)") }
        }

        /// The digest of everything so far (the stream can go on).
        func digest() -> [UInt8] {
            guard let digest = context.copy()?.finish() else { ContentCrypto.fail("EVP_DigestFinal_ex(SHA256)") }
            return digest
        }
    }

    /// Feeds `input` to an EVP update call in pieces its `int` length can hold; false if it fails.
    private static func update(_ input: some Collection<UInt8>, into output: UnsafeMutablePointer<UInt8>,
                               with call: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<Int32>, UnsafePointer<UInt8>, Int32) -> Int32) -> Bool {
        let piece = 1 << 30
        let done = input.withContiguousStorageIfAvailable { input -> Bool in
            var offset = 0
            while offset < input.count {
                let count = min(piece, input.count - offset)
                var written: Int32 = 0
                guard call(output + offset, &written, input.baseAddress! + offset, Int32(count)) == 1, Int(written) == count else { return false }
                offset += count
            }
            return true
        }
        return done ?? update(Array(input), into: output, with: call)
    }

    /// A parameter name OpenSSL may keep a pointer to: static storage.
    private static func name(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    fileprivate static func fail(_ call: String) -> Never {
        fatalError("OpenSSL's \(call) failed: \(OpenSSLError.text())")
    }
}
#endif
