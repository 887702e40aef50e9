import Foundation
import Testing

/// The codec's primitives on the backend this build uses (libcrypto on Linux), checked against
/// published answers by `content-crypto-check`, the program .ci/run also builds against
/// swift-crypto to check the CryptoKit-API code of Apple platforms.
@Suite struct ContentCryptoTests {
    @Test func everyPublishedAnswerIsMet() async throws {
        let (status, output) = try await runProbe([], executable: "content-crypto-check")
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
        #expect(status == 0, "\(lines)")
        #expect(lines.count == 7 && lines.allSatisfy { $0.hasPrefix("ok ") }, "\(lines)")
    }
}
