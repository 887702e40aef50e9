#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// RFC 8188's `aes128gcm` content coding: a header (16-byte salt, record size, key id), then
/// records of `recordSize` bytes, each AES-128-GCM sealed with a nonce from its position, the
/// last one marked by its delimiter so that a truncated stream is detected. The content key
/// and nonce base come from HKDF-SHA-256 over the 16-byte input key and the salt.
///
/// One implementation for both sides: the service encrypts what it publishes, and the device
/// library (and `attach-fetch decrypt`) decrypts it as it streams in.
public enum AES128GCM {
    /// Bytes a record adds to its plaintext: the GCM tag and the one-byte delimiter.
    public static let recordOverhead = 17
    /// Bytes of the header before the key id: salt (16), record size (4), key id length (1).
    public static let fixedHeaderSize = 21
    /// The record size used when publishing: 64 KiB. Records cost 17 bytes each (0.03 % here),
    /// and a decoder's memory is a few records, so on the device it stays in kilobytes; much
    /// smaller records only add calls and overhead.
    public static let defaultRecordSize = 65_536
    /// The largest record size: the most a publisher may be configured to write
    /// (`MediaEncryption.recordSize`) and the most `ContentDecoder` accepts by default. A
    /// decoder holds a whole record before it can authenticate it, so this bounds its memory.
    public static let maxRecordSize = 16 << 20
    /// The longest header: the fixed part and a key id of 255 bytes.
    public static let maxHeaderSize = fixedHeaderSize + 255

    /// The most bytes a stream of `plaintext` bytes in records of `recordSize` with a header
    /// of `headerSize` bytes can have, as this encoder writes it (no padding): the header, the
    /// plaintext and 17 bytes for each record, one more record than the full ones. Saturates
    /// at `Int64.max`.
    public static func maxContentLength(plaintext: Int64, recordSize: Int, headerSize: Int) -> Int64 {
        let plaintext = max(0, plaintext)
        let perRecord = Int64(max(1, recordSize - recordOverhead))
        let (records, overflow1) = (plaintext / perRecord).addingReportingOverflow(1)
        let (overhead, overflow2) = records.multipliedReportingOverflow(by: Int64(recordOverhead))
        let (withText, overflow3) = overhead.addingReportingOverflow(plaintext)
        let (total, overflow4) = withText.addingReportingOverflow(Int64(headerSize))
        return overflow1 || overflow2 || overflow3 || overflow4 ? .max : total
    }

    /// The content encryption key and nonce base for `key` and `salt` (RFC 8188, section 2.2).
    static func recordKeys(key: ContentKey, salt: [UInt8]) -> (cek: [UInt8], nonceBase: [UInt8]) {
        (ContentCrypto.hkdfSHA256(key: key.bytes, salt: salt, info: Array("Content-Encoding: aes128gcm\0".utf8), count: 16),
         ContentCrypto.hkdfSHA256(key: key.bytes, salt: salt, info: Array("Content-Encoding: nonce\0".utf8), count: 12))
    }

    /// The nonce of record `sequence`: the base with the sequence number XORed into its end.
    static func nonce(_ base: [UInt8], _ sequence: UInt64) -> [UInt8] {
        var bytes = base
        for index in 0..<8 { bytes[11 - index] ^= UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(index))) }
        return bytes
    }
}

/// A 16-byte input key for `aes128gcm` (the `key` of RFC 8188, "IKM").
public struct ContentKey: Sendable, Equatable {
    /// The 16 bytes.
    public let bytes: [UInt8]

    /// Nil unless exactly 16 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// From base64url (with or without padding); nil unless it decodes to 16 bytes.
    public init?(base64URL text: String) {
        var base64 = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { return nil }
        self.init(bytes: Array(data))
    }

    /// Base64url without padding, as the descriptor and the payload carry it.
    public var base64URL: String {
        String(Data(bytes).base64EncodedString().compactMap { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 == "=" ? nil : $0 })
    }

    /// The key id written in the header: `af1:` and 16 hex digits of HMAC-SHA-256(key,
    /// "attach-fetch key id"). It tells a wrong key from altered bytes before anything is
    /// decrypted, and reveals nothing about the key (a store already sees that equal media has
    /// equal ciphertext). Text, because other implementations read the key id as UTF-8.
    public var keyID: [UInt8] {
        let mac = ContentCrypto.hmacSHA256(key: bytes, message: Array("attach-fetch key id".utf8))
        return Self.keyIDPrefix + Array(Hex.lowercase(mac.prefix(8)).utf8)
    }

    /// What marks a key id as this format; other key ids are not checked.
    static let keyIDPrefix = Array("af1:".utf8)
}

extension ContentKey: CustomStringConvertible, CustomDebugStringConvertible {
    /// Never the key itself: keys must not reach logs or error text by accident.
    public var description: String { "ContentKey(redacted)" }
    /// Never the key itself.
    public var debugDescription: String { description }
}
