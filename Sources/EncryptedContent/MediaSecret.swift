#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The publisher's secret, from which each content's key and salt are derived:
/// `HMAC-SHA-256(secret, label ‖ SHA-256 of the plaintext)`, truncated to 16 bytes, with the
/// labels "attach-fetch media key" and "attach-fetch media salt".
///
/// Deriving both from the content makes encryption deterministic: the same media gives the
/// same ciphertext, so content addressing, the shared cache, coalescing and replicas publish
/// one object, not one per request. A salt repeats only with the same key and the same
/// plaintext, so no nonce is ever used for two different plaintexts. What an observer learns
/// is that two objects are equal (docs/encryption.md).
public struct MediaSecret: Sendable {
    private let secret: [UInt8]

    /// At least 32 bytes, else nil.
    public init?(bytes: [UInt8]) {
        guard bytes.count >= 32 else { return nil }
        secret = bytes
    }

    /// The key and salt for content whose SHA-256 is `sha256`.
    public func keys(forPlaintextSHA256 sha256: [UInt8]) -> (key: ContentKey, salt: [UInt8]) {
        func derive(_ label: String) -> [UInt8] {
            Array(ContentCrypto.hmacSHA256(key: secret, message: Array(label.utf8) + sha256).prefix(16))
        }
        return (ContentKey(bytes: derive("attach-fetch media key"))!, derive("attach-fetch media salt"))
    }
}

extension MediaSecret: CustomStringConvertible, CustomDebugStringConvertible {
    /// Never the secret.
    public var description: String { "MediaSecret(redacted)" }
    /// Never the secret.
    public var debugDescription: String { description }
}

/// SHA-256 of a stream, as lower-case hex: how a plaintext is checked against its descriptor.
public struct SHA256Hasher {
    private var hasher = ContentCrypto.SHA256Stream()

    public init() {}

    public mutating func update(_ bytes: [UInt8]) {
        hasher.update(bytes)
    }

    /// The digest of everything so far.
    public var hex: String {
        Hex.lowercase(hasher.digest())
    }
}
