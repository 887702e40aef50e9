// The content codec's throughput (aes128gcm, RFC 8188, 4,096-byte records): one buffer
// encrypted and decrypted whole through the public API, as the publisher and the device do.
// Benchmarks/content-codec builds it on each backend (libcrypto, the default on Linux, and
// swift-crypto's BoringSSL with ATTACH_FETCH_SWIFT_CRYPTO=1) and runs them in turns.
//
//   ContentCodecThroughput [MiB]    prints: encrypt MB/s, decrypt MB/s (best of 5 rounds)
import EncryptedContent
import Foundation

let mebibytes = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 64
let plaintext = (0..<mebibytes << 20).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
let key = ContentKey(base64URL: "yqdlZ-tYemfogSmv7Ws5PQ")!
let salt = [UInt8](repeating: 7, count: 16)

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

var best = (encrypt: Double.infinity, decrypt: Double.infinity)
for _ in 0..<5 {
    var message: [UInt8] = []
    best.encrypt = min(best.encrypt, try seconds {
        var encoder = try ContentEncoder(key: key, salt: salt, recordSize: 4096, keyID: [])
        message = encoder.header
        message.reserveCapacity(plaintext.count + plaintext.count / 100 + 64)
        var offset = 0
        while offset < plaintext.count {
            let end = min(offset + encoder.plaintextPerRecord, plaintext.count)
            message += try encoder.seal(plaintext[offset..<end], last: end == plaintext.count)
            offset = end
        }
    })
    var decrypted: [UInt8] = []
    decrypted.reserveCapacity(plaintext.count)
    best.decrypt = min(best.decrypt, try seconds {
        var decoder = ContentDecoder(key: key)
        try decoder.feed(message[...]) { decrypted += $0 }
        try decoder.finish { decrypted += $0 }
    })
    guard decrypted == plaintext else { fatalError("the round trip changed the bytes") }
}
let megabytes = Double(plaintext.count) / 1e6
print(String(format: "encrypt %.0f MB/s, decrypt %.0f MB/s", megabytes / best.encrypt, megabytes / best.decrypt))
