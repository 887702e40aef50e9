import Crypto

/// Decrypts an `aes128gcm` stream as it arrives: `feed` any chunks, then `finish`. Plaintext
/// is handed out record by record, and at most one record plus one chunk is held, so memory
/// does not grow with the content.
///
/// A full record is only opened once a byte after it has arrived (or at `finish`), because
/// only then is it known not to be the last: a stream cut at a record boundary is `truncated`,
/// not taken for whole.
public struct ContentDecoder: Sendable {
    private let key: ContentKey
    private var pending: [UInt8] = []
    /// Where unconsumed bytes start in `pending` (consumed bytes are dropped in batches).
    private var start = 0
    private var recordSize = 0
    private var cek: [UInt8]?
    private var nonceBase: [UInt8] = []
    private var sequence: UInt64 = 0
    private var ended = false

    /// Decrypts with `key`. A header with a key id of this format (`ContentKey.keyID`) that is
    /// not `key`'s is `wrongKey`; other key ids (or none, as other encoders write by default)
    /// are not checked, and a wrong key shows as `authenticationFailed`.
    public init(key: ContentKey) {
        self.key = key
    }

    /// Records decrypted so far.
    public var records: UInt64 { sequence }

    /// Takes the next bytes; `output` gets each record's plaintext as it is opened.
    public mutating func feed(_ bytes: some Collection<UInt8>, output: ([UInt8]) throws -> Void) throws {
        guard !ended else { throw ContentEncryptionError(.malformed, "data after the last record") }
        pending.append(contentsOf: bytes)
        if cek == nil { try readHeader() }
        guard cek != nil else { return }
        while pending.count - start > recordSize {
            try open(pending[start..<start + recordSize], last: false, output: output)
            start += recordSize
        }
        if start > 0 && start >= pending.count / 2 {
            pending.removeFirst(start)
            start = 0
        }
    }

    /// The stream has ended: the last record is opened, and a stream without one is `truncated`.
    public mutating func finish(output: ([UInt8]) throws -> Void) throws {
        guard !ended else { return }
        guard cek != nil else {
            throw ContentEncryptionError(.truncated, "the stream ended inside the header (\(pending.count) bytes)")
        }
        let rest = pending[start...]
        guard !rest.isEmpty else {
            throw ContentEncryptionError(.truncated, "the stream ended after record \(sequence) without a last record")
        }
        guard rest.count >= AES128GCM.recordOverhead else {
            throw ContentEncryptionError(.truncated, "the stream ends with a record of \(rest.count) bytes, too short to be whole")
        }
        try open(rest, last: true, output: output)
        pending = []
        start = 0
    }

    private mutating func readHeader() throws {
        let available = pending.count - start
        guard available >= AES128GCM.fixedHeaderSize else { return }
        let header = Array(pending[start..<start + AES128GCM.fixedHeaderSize])
        let size = header[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let idLength = Int(header[20])
        guard available >= AES128GCM.fixedHeaderSize + idLength else { return }
        guard size > AES128GCM.recordOverhead else {
            throw ContentEncryptionError(.malformed, "the header's record size is \(size); it must be at least 18")
        }
        let keyID = Array(pending[(start + AES128GCM.fixedHeaderSize)..<(start + AES128GCM.fixedHeaderSize + idLength)])
        if keyID.starts(with: ContentKey.keyIDPrefix) && keyID != key.keyID {
            throw ContentEncryptionError(.wrongKey, "the content was encrypted with another key (its key id differs)")
        }
        recordSize = size
        (cek, nonceBase) = AES128GCM.recordKeys(key: key, salt: Array(header[0..<16]))
        start += AES128GCM.fixedHeaderSize + idLength
    }

    private mutating func open(_ record: ArraySlice<UInt8>, last: Bool, output: ([UInt8]) throws -> Void) throws {
        guard let cek else { return }
        let plaintext: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(nonce: try AES128GCM.nonce(nonceBase, sequence),
                                            ciphertext: record.dropLast(16), tag: record.suffix(16))
            plaintext = Array(try AES.GCM.open(box, using: SymmetricKey(data: cek)))
        } catch {
            throw ContentEncryptionError(.authenticationFailed,
                                         "record \(sequence) failed authentication: the bytes were altered or the key is wrong")
        }
        // Padding is zeros after the delimiter: 1 ends a record, 2 the last one.
        guard let end = plaintext.lastIndex(where: { $0 != 0 }) else {
            throw ContentEncryptionError(.malformed, "record \(sequence) has no delimiter")
        }
        switch (plaintext[end], last) {
        case (1, false), (2, true):
            break
        case (1, true):
            throw ContentEncryptionError(.truncated, "the stream ended after record \(sequence), which is not the last")
        case (2, false):
            throw ContentEncryptionError(.malformed, "data after the last record (\(sequence))")
        default:
            throw ContentEncryptionError(.malformed, "record \(sequence) has the delimiter \(plaintext[end]), not 1 or 2")
        }
        sequence += 1
        if last { ended = true }
        try output(Array(plaintext[..<end]))
    }
}
