import EncryptedContent
import Foundation
import Testing

/// RFC 8188 `aes128gcm` as both sides use it: the RFC's own examples, round trips at every
/// record boundary fed in any chunking, and each way a stream can be wrong.
@Suite struct EncryptedContentTests {
    static func base64URL(_ text: String) -> [UInt8] {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Array(Data(base64Encoded: base64)!)
    }

    static func decrypt(_ bytes: [UInt8], key: ContentKey, chunk: Int = 4096) throws -> [UInt8] {
        var decoder = ContentDecoder(key: key)
        var plaintext: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            try decoder.feed(bytes[offset..<min(offset + chunk, bytes.count)]) { plaintext += $0 }
            offset += chunk
        }
        try decoder.finish { plaintext += $0 }
        return plaintext
    }

    static func error(_ body: () throws -> Void) -> ContentEncryptionError.Code? {
        do { try body() } catch let error as ContentEncryptionError { return error.code } catch { return nil }
        return nil
    }

    @Test func theRFCsFirstExampleEncryptsAndDecryptsToTheSameBytes() throws {
        // RFC 8188, section 3.1: "I am the walrus", one record, no key id.
        let key = try #require(ContentKey(base64URL: "yqdlZ-tYemfogSmv7Ws5PQ"))
        let expected = Self.base64URL("I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg")
        let salt = Self.base64URL("I1BsxtFttlv3u_Oo94xnmw")
        #expect(try encrypt(Array("I am the walrus".utf8), key: key, salt: salt, recordSize: 4096, keyID: []) == expected)
        #expect(try Self.decrypt(expected, key: key, chunk: 3) == Array("I am the walrus".utf8))
    }

    @Test func theRFCsSecondExampleWithPaddingAndAForeignKeyIDDecrypts() throws {
        // RFC 8188, section 3.2: record size 25, key id "a1", padded records.
        let key = try #require(ContentKey(base64URL: "BO3ZVPxUlnLORbVGMpbT1Q"))
        let message = Self.base64URL("uNCkWiNYzKTnBN9ji3-qWAAAABkCYTHOG8chz_gnvgOqdGYovxyjuqRyJFjEDyoF1Fvkj6hQPdPHI51OEUKEpgz3SsLWIqS_uA")
        #expect(try Self.decrypt(message, key: key, chunk: 1) == Array("I am the walrus".utf8))
    }

    @Test(arguments: [0, 1, 82, 83, 84, 166, 249, 1_000])
    func roundTripsAtEveryRecordBoundaryInAnyChunking(size: Int) throws {
        // Record size 100: 83 bytes of plaintext per record.
        let key = ContentKey(bytes: (0..<16).map { _ in UInt8.random(in: 0...255) })!
        let plaintext = (0..<size).map { _ in UInt8.random(in: 0...255) }
        let ciphertext = try encrypt(plaintext, key: key, salt: Array(repeating: 7, count: 16), recordSize: 100)
        #expect(ciphertext.count == 21 + key.keyID.count + max(1, (size + 82) / 83) * 17 + size)
        for chunk in [1, 7, 100, 101, 4096] {
            #expect(try Self.decrypt(ciphertext, key: key, chunk: chunk) == plaintext, "chunks of \(chunk)")
        }
    }

    @Test func eachWayAStreamIsWrongHasItsOwnError() throws {
        let key = ContentKey(bytes: Array(repeating: 1, count: 16))!
        let other = ContentKey(bytes: Array(repeating: 2, count: 16))!
        let plaintext = (0..<1_000).map { UInt8(truncatingIfNeeded: $0) }
        let ciphertext = try encrypt(plaintext, key: key, salt: Array(repeating: 3, count: 16), recordSize: 100)
        let header = 21 + key.keyID.count
        // The key id names another key: refused before any record is opened.
        #expect(Self.error { _ = try Self.decrypt(ciphertext, key: other) } == .wrongKey)
        // Without a key id a wrong key can only show as a record that does not authenticate.
        let anonymous = try encrypt(plaintext, key: key, salt: Array(repeating: 3, count: 16), recordSize: 100, keyID: [])
        #expect(Self.error { _ = try Self.decrypt(anonymous, key: other) } == .authenticationFailed)
        // One flipped bit in the third record.
        var flipped = ciphertext
        flipped[header + 2 * 100 + 10] ^= 0x01
        #expect(Self.error { _ = try Self.decrypt(flipped, key: key) } == .authenticationFailed)
        // Cut at a record boundary: every record there is whole, but the last one is missing.
        #expect(Self.error { _ = try Self.decrypt(Array(ciphertext.prefix(header + 3 * 100)), key: key) } == .truncated)
        // Cut inside the header.
        #expect(Self.error { _ = try Self.decrypt(Array(ciphertext.prefix(10)), key: key) } == .truncated)
        // Bytes after a last record that is full: it cannot be taken for the end.
        let full = try encrypt(Array(plaintext.prefix(83 * 4)), key: key, salt: Array(repeating: 3, count: 16), recordSize: 100)
        #expect(Self.error { _ = try Self.decrypt(full + [0], key: key) } == .malformed)
        // After a short last record the extra byte makes it another record, which fails.
        #expect(Self.error { _ = try Self.decrypt(ciphertext + [0], key: key) } == .authenticationFailed)
        // An empty stream.
        #expect(Self.error { _ = try Self.decrypt([], key: key) } == .truncated)
    }

    @Test func mediaKeysAreDerivedFromTheSecretAndTheContentAlone() throws {
        let secret = try #require(MediaSecret(bytes: Array(repeating: 9, count: 32)))
        #expect(MediaSecret(bytes: Array(repeating: 9, count: 31)) == nil, "a secret under 32 bytes is refused")
        let first = secret.keys(forPlaintextSHA256: Array(repeating: 1, count: 32))
        let again = try #require(MediaSecret(bytes: Array(repeating: 9, count: 32))).keys(forPlaintextSHA256: Array(repeating: 1, count: 32))
        let other = secret.keys(forPlaintextSHA256: Array(repeating: 2, count: 32))
        let rotated = try #require(MediaSecret(bytes: Array(repeating: 8, count: 32))).keys(forPlaintextSHA256: Array(repeating: 1, count: 32))
        #expect(first.key == again.key && first.salt == again.salt, "equal media, equal key and salt")
        #expect(first.key != other.key && first.salt != other.salt)
        #expect(first.key != rotated.key, "a new secret gives new keys")
        #expect(first.key.bytes != first.salt, "key and salt are derived apart")
        #expect("\(first.key)" == "ContentKey(redacted)" && !"\(secret)".contains("9"))
    }
}
