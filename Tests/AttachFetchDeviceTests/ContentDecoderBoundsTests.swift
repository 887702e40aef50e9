import EncryptedContent
import Foundation
import Testing

/// What `ContentDecoder` holds whatever a stream's shape: at most one record of a size it
/// accepts (or the header, before the records), checked after every chunk.
@Suite struct ContentDecoderBoundsTests {
    @Test func aRecordSizeOverTheMaximumIsRefusedAtTheHeaderBeforeAnyRecordIsHeld() throws {
        let key = randomKey()
        // The fixed 21 bytes are enough: the key id and the records are never waited for.
        var decoder = ContentDecoder(key: key)
        let hostile = header(recordSize: UInt32.max, keyID: key.keyID)
        var refused: ContentEncryptionError?
        do { try decoder.feed(hostile.prefix(AES128GCM.fixedHeaderSize)) { _ in } } catch let error as ContentEncryptionError { refused = error }
        #expect(refused?.code == .recordTooLarge, "\(String(describing: refused))")
        #expect(refused?.message.contains("4294967295") == true && refused?.message.contains("\(AES128GCM.maxRecordSize)") == true)
        #expect(decoder.bufferedByteCount <= AES128GCM.fixedHeaderSize)
        // One byte over the maximum, in a stream that is otherwise valid: the size alone is
        // refused, and a decoder told to take larger records decrypts it.
        let plaintext = randomBytes(1_000)
        let over = try encrypt(plaintext, key: key, recordSize: AES128GCM.maxRecordSize + 1)
        let refusedValid = decode(over, key: key, chunk: 4096)
        #expect(throws: ContentEncryptionError.self) { try refusedValid.result.get() }
        if case .failure(let error) = refusedValid.result { #expect(error.code == .recordTooLarge) }
        #expect(try decode(over, key: key, chunk: 4096, maxRecordSize: .max).result.get() == plaintext)
        // The maximum itself is accepted.
        let atMaximum = try encrypt(plaintext, key: key, recordSize: AES128GCM.maxRecordSize)
        #expect(try decode(atMaximum, key: key, chunk: 100).result.get() == plaintext)
    }

    @Test(arguments: [0, 1, 16, 17])
    func aZeroOrTinyRecordSizeIsMalformed(recordSize: UInt32) {
        let key = randomKey()
        let stream = header(recordSize: recordSize, keyID: key.keyID) + randomBytes(100)
        let decoded = decode(stream, key: key, chunk: 7)
        guard case .failure(let error) = decoded.result else { Issue.record("record size \(recordSize) was accepted"); return }
        #expect(error.code == .malformed && error.message.contains("at least 18"), "\(error)")
        #expect(decoded.mostHeld <= AES128GCM.maxHeaderSize)
    }

    /// Every record size, up to the maximum: the decoder never holds more than one record.
    @Test(arguments: [18, 19, 100, 4_096, 65_536, 1 << 20, AES128GCM.maxRecordSize])
    func recordsOfEverySizeUpToTheMaximumRoundTripHoldingAtMostOneRecord(recordSize: Int) async throws {
        let key = randomKey()
        // Two full records and a short last one (fewer for the tiny sizes, which would be slow).
        let length = recordSize < 100 ? 500 : 2 * (recordSize - 17) + recordSize / 3
        let chunks = [1, 4_096, 1 << 20].filter { $0 >= recordSize / 64 || $0 == 4_096 }
        // Compared off the pool too: comparing megabytes element by element takes a debug build
        // seconds.
        let decodes = try await offPool {
            let plaintext = randomBytes(length)
            let stream = try encrypt(plaintext, key: key, recordSize: recordSize)
            return chunks.map { chunk in
                let decoded = decode(stream, key: key, chunk: chunk)
                return (result: decoded.result.map { $0 == plaintext }, mostHeld: decoded.mostHeld)
            }
        }
        for (chunk, decoded) in zip(chunks, decodes) {
            #expect(try decoded.result.get(), "chunks of \(chunk): the plaintext decrypted is not the one encrypted")
            // Before the records, the header (41 bytes with this key id) is what is held.
            let bound = max(recordSize, AES128GCM.fixedHeaderSize + key.keyID.count)
            #expect(decoded.mostHeld <= bound, "held \(decoded.mostHeld) bytes with records of \(recordSize), chunks of \(chunk)")
        }
    }

    @Test func aHeaderSplitAcrossChunksAtEveryPointDecodes() throws {
        let key = randomKey()
        let plaintext = randomBytes(300)
        let stream = try encrypt(plaintext, key: key, recordSize: 100)
        let headerSize = AES128GCM.fixedHeaderSize + key.keyID.count
        for cut in 1..<headerSize {
            var decoder = ContentDecoder(key: key)
            var decoded: [UInt8] = []
            try decoder.feed(stream[..<cut]) { decoded += $0 }
            #expect(decoder.headerRecordSize == nil && decoder.bufferedByteCount == cut, "cut at \(cut)")
            try decoder.feed(stream[cut...]) { decoded += $0 }
            try decoder.finish { decoded += $0 }
            #expect(decoded == plaintext, "cut at \(cut)")
        }
        // Byte by byte, the header never holds more than itself.
        let bytewise = decode(stream, key: key, chunk: 1)
        #expect(try bytewise.result.get() == plaintext)
        #expect(bytewise.mostHeld <= 100)
    }

    @Test func aBodyThatNeverEndsIsDecodedInBoundedMemoryOrRefusedAtItsFirstRecord() async throws {
        let key = randomKey()
        // Valid records that never end: each is opened as it completes, none is kept.
        let (decrypted, mostHeld, perRecord) = try await offPool {
            var encoder = try ContentEncoder(key: key, salt: randomBytes(16), recordSize: 4_096)
            var decoder = ContentDecoder(key: key)
            var mostHeld = 0
            var decrypted = 0
            let block = randomBytes(encoder.plaintextPerRecord)
            try decoder.feed(encoder.header) { _ in }
            for _ in 0..<2_000 {
                try decoder.feed(try encoder.seal(block, last: false)) { decrypted += $0.count }
                mostHeld = max(mostHeld, decoder.bufferedByteCount)
            }
            return (decrypted, mostHeld, encoder.plaintextPerRecord)
        }
        #expect(decrypted == 1_999 * perRecord, "every record but the one held is handed out")
        #expect(mostHeld <= 4_096)
        // The same length of garbage after a valid header fails at the first record.
        let garbage = header(recordSize: 4_096, keyID: key.keyID) + randomBytes(2_000 * 4_096)
        let refused = decode(garbage, key: key, chunk: 65_536)
        guard case .failure(let error) = refused.result else { Issue.record("garbage was accepted"); return }
        #expect(error.code == .authenticationFailed)
        #expect(refused.mostHeld <= 4_096)
    }

    @Test func garbageAfterTheLastRecordIsRefusedWithoutHoldingMoreThanARecord() throws {
        let key = randomKey()
        let plaintext = randomBytes(1_000)
        // A short last record: the garbage joins it, and it no longer authenticates.
        let short = try encrypt(plaintext, key: key, recordSize: 300)
        let afterShort = decode(short + randomBytes(10_000), key: key, chunk: 333)
        guard case .failure(let shortError) = afterShort.result else { Issue.record("garbage after a short last record was accepted"); return }
        #expect(shortError.code == .authenticationFailed)
        #expect(afterShort.mostHeld <= 300)
        // A full last record: the byte after it makes it a record that is not the last.
        let full = try encrypt(randomBytes(283 * 3), key: key, recordSize: 300)
        let afterFull = decode(full + [0], key: key, chunk: 64)
        guard case .failure(let fullError) = afterFull.result else { Issue.record("a byte after a full last record was accepted"); return }
        #expect(fullError.code == .malformed)
        // After the stream has ended, any byte is refused.
        var decoder = ContentDecoder(key: key)
        try decoder.feed(short) { _ in }
        try decoder.finish { _ in }
        #expect(throws: ContentEncryptionError.self) { try decoder.feed([0]) { _ in } }
    }

    /// The body bound the fetcher enforces: never below what the publisher writes, and at most
    /// one record's overhead above it.
    @Test(arguments: [18, 19, 100, 4_096, 65_536])
    func maxContentLengthBoundsEveryStreamTheEncoderWrites(recordSize: Int) throws {
        let key = randomKey()
        let perRecord = recordSize - 17
        for length in [0, 1, perRecord - 1, perRecord, perRecord + 1, 3 * perRecord, 3 * perRecord + 5] where length >= 0 {
            let stream = try encrypt(randomBytes(length), key: key, recordSize: recordSize)
            var decoder = ContentDecoder(key: key)
            try decoder.feed(stream.prefix(AES128GCM.fixedHeaderSize + key.keyID.count)) { _ in }
            let bound = try #require(decoder.maxContentLength(forPlaintext: Int64(length)))
            #expect(Int64(stream.count) <= bound && bound - Int64(stream.count) <= 17, "\(length) bytes in records of \(recordSize): \(stream.count) for \(bound)")
        }
        #expect(AES128GCM.maxContentLength(plaintext: .max, recordSize: 18, headerSize: 276) == .max, "saturates")
    }
}
