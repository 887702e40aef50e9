import EncryptedContent
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Publishing encrypted (`AttachFetchConfiguration.mediaEncryption`): everything published —
/// the delivered file, the thumbnail and the variants — is stored as RFC 8188 `aes128gcm`,
/// and the descriptor carries each one's key (`encryption`). The files in the caller's output
/// directory stay plaintext: they are the caller's own. docs/encryption.md has the threat model.
public struct MediaEncryption: Sendable {
    /// The secret each content's key is derived from (with the plaintext's SHA-256).
    public let secret: MediaSecret
    /// Bytes per record, header's `rs`. Default 65,536 (`AES128GCM.defaultRecordSize`); at most
    /// 16 MiB (`AES128GCM.maxRecordSize`), the most the device library decodes.
    public var recordSize = AES128GCM.defaultRecordSize
    /// Whether every request is encrypted. Default true (the CLI's `--encrypt-media`). False:
    /// only requests with `AttachmentRequest.encrypt` set are (the service without
    /// `--encrypt-media`, which takes `"encrypt": true` per request).
    public var encryptsEverything = true

    /// The secret read from `path`: a regular file of at least 32 bytes that only its owner
    /// can read (``SecretFile``). The message of the error never contains the file's content.
    public init(keyFile path: String) throws(AttachFetchError) {
        try self.init(secret: try SecretFile.read(path, what: "the media key file"), source: "the media key file \(path)")
    }

    /// The secret given as bytes (at least 32, random).
    public init(secret: [UInt8]) throws(AttachFetchError) {
        try self.init(secret: secret, source: "the media secret")
    }

    private init(secret: [UInt8], source: String) throws(AttachFetchError) {
        guard let secret = MediaSecret(bytes: secret) else {
            throw .invalidConfiguration("\(source) holds \(secret.count) bytes; it must hold at least 32 random bytes")
        }
        self.secret = secret
    }

    func validate() throws(AttachFetchError) {
        // At most what devices decode (`ContentDecoder`'s default maximum): the same constant.
        guard recordSize > AES128GCM.recordOverhead, recordSize <= AES128GCM.maxRecordSize else {
            throw .invalidConfiguration("mediaEncryption.recordSize must be from 18 to \(AES128GCM.maxRecordSize) bytes, not \(recordSize)")
        }
    }
}

/// Writes the `aes128gcm` copy of a file that is about to be published. Blocking file I/O:
/// call it from a worker thread.
enum EncryptedCopy {
    /// What publishing the copy needs, and what the descriptor records about it.
    struct Made {
        var file: FileToPublish
        var encryption: AttachmentDescriptor.Encryption
        var bytes: Int64
    }

    /// Encrypts `file` into a new file from `makeOutput` (an unnamed or a named file in the
    /// work store, which the caller owns and removes), named for the ciphertext's SHA-256.
    static func make(_ file: FileToPublish, with encryption: MediaEncryption,
                     output: String) throws(Reason) -> Made {
        let plaintextDigest: String
        if let sha256 = file.sha256 { plaintextDigest = sha256 } else { plaintextDigest = try Publisher.hash(file.path) }
        guard let digestBytes = hexBytes(plaintextDigest) else {
            throw Reason(code: .ioError, message: "cannot encrypt \(file.suffix): its SHA-256 is malformed")
        }
        let (key, salt) = encryption.secret.keys(forPlaintextSHA256: digestBytes)
        var encoder: ContentEncoder
        do throws(ContentEncryptionError) {
            encoder = try ContentEncoder(key: key, salt: salt, recordSize: encryption.recordSize)
        } catch {
            throw Reason(code: .ioError, message: "cannot encrypt \(file.suffix): \(error.message)")
        }
        let cipherDigest = SHA256Digest()
        var written: Int64 = 0
        var sealError: ContentEncryptionError?
        // Written as every new file is (SafeFile.writeNew): never over an existing one, synced.
        try SafeFile.writeNew(output, mode: 0o600) { emit throws(Reason) in
            func put(_ bytes: [UInt8]) {
                bytes.withUnsafeBytes { buffer in
                    cipherDigest.update(buffer)
                    emit(buffer)
                }
                written += Int64(bytes.count)
            }
            put(encoder.header)
            // One record is held back until the next byte shows it is not the last.
            var record: [UInt8] = []
            record.reserveCapacity(encoder.plaintextPerRecord)
            func seal(last: Bool) {
                do throws(ContentEncryptionError) { put(try encoder.seal(record, last: last)) } catch { sealError = error }
                record.removeAll(keepingCapacity: true)
            }
            try SafeFile.eachChunk(of: file.path) { chunk in
                var rest = chunk[...]
                while !rest.isEmpty && sealError == nil {
                    if record.count == encoder.plaintextPerRecord { seal(last: false) }
                    let taken = rest.prefix(encoder.plaintextPerRecord - record.count)
                    record.append(contentsOf: taken)
                    rest = rest.dropFirst(taken.count)
                }
            }
            if sealError == nil { seal(last: true) }
        }
        if let sealError { throw Reason(code: .ioError, message: "cannot encrypt \(file.suffix): \(sealError.message)") }
        return Made(file: .init(path: output, sha256: try cipherDigest.finalizeHex(), suffix: publishedSuffix),
                    encryption: .init(scheme: "aes128gcm", key: key.base64URL, recordSize: encryption.recordSize),
                    bytes: written)
    }

    /// The suffix of every encrypted object: the name says nothing of the media's type.
    static let publishedSuffix = "aes128gcm"

    private static func hexBytes(_ hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}
