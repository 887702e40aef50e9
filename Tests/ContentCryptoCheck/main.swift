// Checks the codec's primitives against published and independently computed answers, through
// the public API only: the RFC 8188 examples (HKDF-SHA-256 and AES-128-GCM), SHA-256 of "abc"
// (FIPS 180-2), and HMAC-SHA-256 through the key id and `MediaSecret` (answers computed with
// Python's hmac and hashlib). AttachFetchDeviceTests runs it on the backend a build uses;
// .ci/run builds it once more with ATTACH_FETCH_SWIFT_CRYPTO=1, so that the CryptoKit-API code
// Apple platforms use is compiled and checked on Linux too.
//
// content-crypto-check: prints one line per check; exits 1 if any fails.
import EncryptedContent
import Foundation

func bytes(base64URL text: String) -> [UInt8] {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    return Array(Data(base64Encoded: base64)!)
}

func decrypt(_ message: [UInt8], key: ContentKey) throws -> [UInt8] {
    var decoder = ContentDecoder(key: key)
    var plaintext: [UInt8] = []
    try decoder.feed(message[...]) { plaintext += $0 }
    try decoder.finish { plaintext += $0 }
    return plaintext
}

let walrus = Array("I am the walrus".utf8)
let firstKey = ContentKey(base64URL: "yqdlZ-tYemfogSmv7Ws5PQ")!
let firstMessage = bytes(base64URL: "I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg")

let checks: [(name: String, passes: () throws -> Bool)] = [
    ("RFC 8188 3.1 encrypts to the published bytes", {
        var encoder = try ContentEncoder(key: firstKey, salt: bytes(base64URL: "I1BsxtFttlv3u_Oo94xnmw"), recordSize: 4096, keyID: [])
        return encoder.header + (try encoder.seal(walrus, last: true)) == firstMessage
    }),
    ("RFC 8188 3.1 decrypts", { try decrypt(firstMessage, key: firstKey) == walrus }),
    ("RFC 8188 3.2 (padded records, key id a1) decrypts", {
        let message = bytes(base64URL: "uNCkWiNYzKTnBN9ji3-qWAAAABkCYTHOG8chz_gnvgOqdGYovxyjuqRyJFjEDyoF1Fvkj6hQPdPHI51OEUKEpgz3SsLWIqS_uA")
        return try decrypt(message, key: ContentKey(base64URL: "BO3ZVPxUlnLORbVGMpbT1Q")!) == walrus
    }),
    ("an altered byte fails authentication", {
        var altered = firstMessage
        altered[altered.count - 20] ^= 1
        do { _ = try decrypt(altered, key: firstKey) } catch let error as ContentEncryptionError { return error.code == .authenticationFailed }
        return false
    }),
    ("SHA-256 of \"abc\" (FIPS 180-2), and a copy going on alone", {
        var hasher = SHA256Hasher()
        hasher.update(Array("a".utf8))
        let copy = hasher
        hasher.update(Array("bc".utf8))
        return hasher.hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
            && copy.hex == "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
    }),
    ("HMAC-SHA-256: the key id", { String(decoding: firstKey.keyID, as: UTF8.self) == "af1:a1d8c8f9c28f274c" }),
    ("HMAC-SHA-256: MediaSecret's key and salt", {
        var hasher = SHA256Hasher()
        hasher.update(walrus)
        let hex = Array(hasher.hex.utf8)
        let digest = stride(from: 0, to: 64, by: 2).map { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
        let (key, salt) = MediaSecret(bytes: Array(0..<32))!.keys(forPlaintextSHA256: digest)
        return key.base64URL == "gVyM2WTnDSbjY7nMvJnPcQ" && salt.map { String(format: "%02x", $0) }.joined() == "777d12002cf3e6d7b2a938185c7f7522"
    }),
]

var failed = 0
for (name, passes) in checks {
    let passed = (try? passes()) ?? false
    if !passed { failed += 1 }
    print("\(passed ? "ok  " : "FAIL") \(name)")
}
exit(failed == 0 ? 0 : 1)
