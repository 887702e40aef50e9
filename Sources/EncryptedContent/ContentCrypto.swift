#if canImport(CryptoKit)
import CryptoKit
#elseif SWIFT_CRYPTO
import Crypto
#endif

#if canImport(CryptoKit) || SWIFT_CRYPTO
/// The primitives the codec is built from, on CryptoKit's API: the system's CryptoKit on Apple
/// platforms, where the device library runs. A Linux build compiles this file against
/// swift-crypto (the same API) when asked to (`ATTACH_FETCH_SWIFT_CRYPTO=1`, as `.ci/run` does to
/// check it); otherwise Linux uses `ContentCrypto+OpenSSL.swift`. Both pass the same published
/// test vectors (`Tests/ContentCryptoCheck`).
enum ContentCrypto {
    /// RFC 5869 HKDF with SHA-256, `count` (at most 255 × 32) bytes.
    static func hkdfSHA256(key: [UInt8], salt: [UInt8], info: [UInt8], count: Int) -> [UInt8] {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: key), salt: salt, info: info, outputByteCount: count)
            .withUnsafeBytes { Array($0) }
    }

    /// HMAC-SHA-256 of `message` under `key`: 32 bytes.
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }

    /// AES-128-GCM with a 12-byte nonce: the ciphertext followed by the 16-byte tag; nil if the
    /// key or nonce has the wrong length.
    static func sealAES128GCM(key: [UInt8], nonce: [UInt8], plaintext: [UInt8]) -> [UInt8]? {
        guard key.count == 16, let nonce = try? AES.GCM.Nonce(data: nonce),
              let box = try? AES.GCM.seal(plaintext, using: SymmetricKey(data: key), nonce: nonce) else { return nil }
        return Array(box.ciphertext) + Array(box.tag)
    }

    /// The plaintext of `sealed` (ciphertext and tag), or nil when it fails authentication.
    /// `sealed` is emptied as soon as the cipher holds its own copy, so that a record is held
    /// at most twice.
    static func openAES128GCM(key: [UInt8], nonce: [UInt8], sealed: inout [UInt8]) -> [UInt8]? {
        guard key.count == 16, sealed.count >= 16, let nonce = try? AES.GCM.Nonce(data: nonce),
              let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: sealed.dropLast(16), tag: sealed.suffix(16)) else {
            return nil
        }
        sealed = []
        return (try? AES.GCM.open(box, using: SymmetricKey(data: key))).map { Array($0) }
    }

    /// SHA-256 over a stream; a copy goes on from where the original was.
    struct SHA256Stream {
        private var hash = SHA256()

        mutating func update(_ bytes: [UInt8]) { hash.update(data: bytes) }

        /// The digest of everything so far (the stream can go on).
        func digest() -> [UInt8] { Array(hash.finalize()) }
    }
}
#endif
