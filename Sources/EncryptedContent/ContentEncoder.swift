/// Encrypts a stream as `aes128gcm`: `header` once, then `seal` for each record's plaintext,
/// at most `plaintextPerRecord` bytes, the last one with `last: true`. Every record but the
/// last is full, as RFC 8188 requires (no padding is added).
public struct ContentEncoder: Sendable {
    /// Bytes of plaintext in each record but the last.
    public let plaintextPerRecord: Int
    private let recordSize: Int
    private let salt: [UInt8]
    private let keyID: [UInt8]
    private let cek: [UInt8]
    private let nonceBase: [UInt8]
    private var sequence: UInt64 = 0
    private var finished = false

    /// `salt` must be 16 bytes; `recordSize` from 18 to 2^32-1; `keyID` at most 255 bytes.
    public init(key: ContentKey, salt: [UInt8], recordSize: Int = AES128GCM.defaultRecordSize,
                keyID: [UInt8]? = nil) throws(ContentEncryptionError) {
        guard salt.count == 16 else { throw ContentEncryptionError(.malformed, "the salt must be 16 bytes, not \(salt.count)") }
        guard recordSize > AES128GCM.recordOverhead, recordSize <= Int(UInt32.max) else {
            throw ContentEncryptionError(.malformed, "the record size must be from 18 to 4294967295 bytes, not \(recordSize)")
        }
        let keyID = keyID ?? key.keyID
        guard keyID.count <= 255 else { throw ContentEncryptionError(.malformed, "the key id must be at most 255 bytes") }
        self.recordSize = recordSize
        self.plaintextPerRecord = recordSize - AES128GCM.recordOverhead
        self.salt = salt
        self.keyID = keyID
        (cek, nonceBase) = AES128GCM.recordKeys(key: key, salt: salt)
    }

    /// The header: salt, record size, key id.
    public var header: [UInt8] {
        let size = UInt32(recordSize)
        return salt + [UInt8(size >> 24), UInt8(truncatingIfNeeded: size >> 16), UInt8(truncatingIfNeeded: size >> 8),
                       UInt8(truncatingIfNeeded: size)] + [UInt8(keyID.count)] + keyID
    }

    /// The next record: `plaintext` (at most `plaintextPerRecord` bytes; exactly that unless
    /// `last`) sealed with its delimiter.
    public mutating func seal(_ plaintext: some Collection<UInt8>, last: Bool) throws(ContentEncryptionError) -> [UInt8] {
        guard !finished else { throw ContentEncryptionError(.malformed, "a record after the last one") }
        guard plaintext.count <= plaintextPerRecord, last || plaintext.count == plaintextPerRecord else {
            throw ContentEncryptionError(.malformed, "a record of \(plaintext.count) bytes; records hold \(plaintextPerRecord) (the last one at most that)")
        }
        var padded = [UInt8]()
        padded.reserveCapacity(plaintext.count + 1)
        padded.append(contentsOf: plaintext)
        padded.append(last ? 2 : 1)
        guard let sealed = ContentCrypto.sealAES128GCM(key: cek, nonce: AES128GCM.nonce(nonceBase, sequence), plaintext: padded) else {
            throw ContentEncryptionError(.malformed, "AES-GCM refused record \(sequence)")
        }
        sequence += 1
        finished = last
        return sealed
    }
}

/// Why content could not be encrypted or decrypted. Messages never contain key material.
public struct ContentEncryptionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong; more codes may be added.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        /// The header's key id is not the given key's: the payload and the object do not match.
        public static let wrongKey = Code(rawValue: "wrongKey")
        /// A record failed authentication: its bytes were altered (or the key is wrong and the
        /// header had no key id).
        public static let authenticationFailed = Code(rawValue: "authenticationFailed")
        /// The stream ended before its last record.
        public static let truncated = Code(rawValue: "truncated")
        /// Not `aes128gcm` as RFC 8188 writes it (bad header, record size, delimiter, data
        /// after the last record).
        public static let malformed = Code(rawValue: "malformed")
        /// The header's record size is more than the decoder takes (`ContentDecoder`'s
        /// `maxRecordSize`): refused before any record is held.
        public static let recordTooLarge = Code(rawValue: "recordTooLarge")
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for people.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
