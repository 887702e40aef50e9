#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Decrypts an `aes128gcm` stream as it arrives: `feed` any chunks, then `finish`. Plaintext
/// is handed out record by record.
///
/// Memory is bounded by the record size, whatever the stream: a header whose record size is
/// over `maxRecordSize` is refused (`recordTooLarge`) before any record is held; the decoder
/// then holds at most one record between calls (`bufferedByteCount`: at most the record size,
/// or the header's 276 bytes before it), reading each chunk in place; and opening a record
/// holds at most two buffers of its size at once (the sealed copy AES-GCM takes, then the
/// plaintext and the copy `output` gets). So: two records and the caller's chunk, about
/// 128 KiB for the 64 KiB records attach-fetch publishes and 32 MiB at the 16 MiB maximum.
///
/// A full record is only opened once a byte after it has arrived (or at `finish`), because
/// only then is it known not to be the last: a stream cut at a record boundary is `truncated`,
/// not taken for whole.
public struct ContentDecoder: Sendable {
    private let key: ContentKey
    /// The largest record size this decoder accepts.
    public let maxRecordSize: Int
    /// The header while it arrives, then the current record: never more than one record.
    private var pending: [UInt8] = []
    /// The header's record size; 0 until the header is read.
    private var recordSize = 0
    private var headerLength = 0
    private var cek: [UInt8]?
    private var nonceBase: [UInt8] = []
    private var sequence: UInt64 = 0
    private var ended = false

    /// Decrypts with `key`. A header with a key id of this format (`ContentKey.keyID`) that is
    /// not `key`'s is `wrongKey`; other key ids (or none, as other encoders write by default)
    /// are not checked, and a wrong key shows as `authenticationFailed`. A header whose record
    /// size is over `maxRecordSize` (16 MiB by default, the most attach-fetch publishes) is
    /// `recordTooLarge`.
    public init(key: ContentKey, maxRecordSize: Int = AES128GCM.maxRecordSize) {
        self.key = key
        self.maxRecordSize = maxRecordSize
    }

    /// Records decrypted so far.
    public var records: UInt64 { sequence }

    /// Bytes held between calls: the header so far, then the current record's.
    public var bufferedByteCount: Int { pending.count }

    /// The header's record size, once the header has been read.
    public var headerRecordSize: Int? { recordSize > 0 ? recordSize : nil }

    /// The most bytes the whole stream may have for `plaintext` bytes of plaintext, by its
    /// header (`AES128GCM.maxContentLength`); nil until the header has been read. A caller that
    /// knows the plaintext's size refuses a longer body with it as the bytes arrive.
    public func maxContentLength(forPlaintext plaintext: Int64) -> Int64? {
        guard recordSize > 0 else { return nil }
        return AES128GCM.maxContentLength(plaintext: plaintext, recordSize: recordSize, headerSize: headerLength)
    }

    /// Takes the next bytes; `output` gets each record's plaintext as it is opened.
    public mutating func feed(_ bytes: some Collection<UInt8>, output: ([UInt8]) throws -> Void) throws {
        guard !ended else { throw ContentEncryptionError(.malformed, "data after the last record") }
        var index = bytes.startIndex
        if recordSize == 0 {
            index = try readHeader(bytes, from: index)
            if recordSize == 0 { return }
        }
        while index != bytes.endIndex {
            if pending.count == recordSize {
                // A byte follows this full record, so it is not the last.
                try open(last: false, output: output)
            }
            let end = bytes.index(index, offsetBy: recordSize - pending.count, limitedBy: bytes.endIndex) ?? bytes.endIndex
            append(bytes[index..<end], reserving: recordSize)
            index = end
        }
    }

    /// The stream has ended: the last record is opened, and a stream without one is `truncated`.
    public mutating func finish(output: ([UInt8]) throws -> Void) throws {
        guard !ended else { return }
        guard recordSize > 0 else {
            throw ContentEncryptionError(.truncated, "the stream ended inside the header (\(pending.count) bytes)")
        }
        guard !pending.isEmpty else {
            throw ContentEncryptionError(.truncated, "the stream ended after record \(sequence) without a last record")
        }
        guard pending.count >= AES128GCM.recordOverhead else {
            throw ContentEncryptionError(.truncated, "the stream ends with a record of \(pending.count) bytes, too short to be whole")
        }
        try open(last: true, output: output)
    }

    /// Appends `bytes`; the buffer grows once, to `size` (the record size, or the header's),
    /// not by doubling past it, nor by copying a growing record over and over. Pages of it that
    /// no byte has reached yet are not resident.
    private mutating func append(_ bytes: some Collection<UInt8>, reserving size: Int) {
        if pending.count + bytes.count > pending.capacity { pending.reserveCapacity(max(size, pending.count + bytes.count)) }
        pending.append(contentsOf: bytes)
    }

    /// Takes header bytes from `bytes`; returns where the rest starts. The record size is
    /// checked as soon as its four bytes are in, before the key id or any record.
    private mutating func readHeader<C: Collection<UInt8>>(_ bytes: C, from start: C.Index) throws -> C.Index {
        let fixed = AES128GCM.fixedHeaderSize
        var index = start
        func take(upTo count: Int) {
            let end = bytes.index(index, offsetBy: count - pending.count, limitedBy: bytes.endIndex) ?? bytes.endIndex
            append(bytes[index..<end], reserving: count)
            index = end
        }
        if pending.count < fixed { take(upTo: fixed) }
        guard pending.count >= fixed else { return index }
        let size = pending[16..<20].reduce(0) { $0 << 8 | Int($1) }
        guard size > AES128GCM.recordOverhead else {
            throw ContentEncryptionError(.malformed, "the header's record size is \(size); it must be at least 18")
        }
        guard size <= maxRecordSize else {
            throw ContentEncryptionError(.recordTooLarge,
                                         "the header's record size is \(size) bytes; this decoder takes at most \(maxRecordSize)")
        }
        let length = fixed + Int(pending[20])
        if pending.count < length { take(upTo: length) }
        guard pending.count == length else { return index }
        let keyID = Array(pending[fixed..<length])
        if keyID.starts(with: ContentKey.keyIDPrefix) && keyID != key.keyID {
            throw ContentEncryptionError(.wrongKey, "the content was encrypted with another key (its key id differs)")
        }
        (cek, nonceBase) = AES128GCM.recordKeys(key: key, salt: Array(pending[0..<16]))
        recordSize = size
        headerLength = length
        pending = []
        return index
    }

    /// Opens the record in `pending`, and empties it.
    private mutating func open(last: Bool, output: ([UInt8]) throws -> Void) throws {
        let plaintext = try decrypt()
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
        try output(Array(plaintext[plaintext.startIndex..<end]))
    }

    /// The record's plaintext with its delimiter; `pending` is emptied. Two records at most are
    /// held at once: `pending` goes as soon as AES-GCM has its own copy of the record (or has
    /// decrypted it), before the plaintext is copied out.
    private mutating func decrypt() throws -> [UInt8] {
        guard let cek else { throw ContentEncryptionError(.malformed, "a record before the header") }
        guard let plaintext = ContentCrypto.openAES128GCM(key: cek, nonce: AES128GCM.nonce(nonceBase, sequence), sealed: &pending) else {
            pending = []
            throw ContentEncryptionError(.authenticationFailed,
                                         "record \(sequence) failed authentication: the bytes were altered or the key is wrong")
        }
        return plaintext
    }
}
