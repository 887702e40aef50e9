import Foundation
import Testing
@testable import AttachFetchDecoderKeeper
import AttachFetchCore
import AttachFetchDecoderProtocol
import TestHelpers
#if canImport(Glibc)
import Glibc
#endif

/// The keeper's seal of a worker's output (`AnswerCheck.facts`): what is delivered is a copy the
/// keeper made in the pass that hashed it, and an output it cannot copy is never delivered
/// unsealed.
@Suite struct SealTests {
    @Test func anOutputIsCopiedInThePassThatHashesIt() throws {
        let scratch = Scratch()
        let output = scratch.path + "/made.jpg"
        let bytes = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: URL(fileURLWithPath: output))
        let facts = try AnswerCheck.facts(of: output, hashing: true, sealingIn: scratch.path).get()
        let copy = try #require(facts.copy)
        #expect(facts.bytes == Int64(bytes.count) && facts.sha256 == sha256Hex(bytes))
        // What the copy holds is what was hashed, whatever the worker writes afterwards.
        try Data("rewritten".utf8).write(to: URL(fileURLWithPath: output))
        var copied = [UInt8](repeating: 0, count: bytes.count + 1)
        let read = copied.withUnsafeMutableBytes { pread(copy.descriptor, $0.baseAddress, $0.count, 0) }
        #expect(read == bytes.count && Data(copied.prefix(read)) == bytes)
    }

    /// /proc makes no unnamed file (O_TMPFILE): the seal cannot be made, and the answer is
    /// refused with ioError (the host's fault, never cached), not delivered as the worker left it.
    @Test func anOutputThatCannotBeSealedIsNotDelivered() throws {
        let scratch = Scratch()
        let output = scratch.path + "/made.jpg"
        try Data([0xFF, 0xD8, 0xFF, 0xE0]).write(to: URL(fileURLWithPath: output))
        #expect(throws: AnswerCheck.FactsFailure.unsealable) { try AnswerCheck.facts(of: output, hashing: true, sealingIn: "/proc").get() }
        // The keeper's check of a whole answer: refused, ioError, naming why.
        let job = DecodeJob.thumbnail(source: scratch.path + "/source.jpg", destinationBase: scratch.path + "/made", shape: .squareCenter,
                                      limits: ThumbnailLimits(maxEdge: 320, maxPixels: 1 << 26, maxProgressivePixels: 1 << 24,
                                                                 maxAnimationFrames: 500, maxAnimationPixels: 1 << 27))
        var answer = DecodeAnswer(failure: Reason(code: .ioError, message: ""))
        answer.failure = nil
        answer.thumbnail = ThumbnailOutcome(sourceWidth: 8, sourceHeight: 8, file: output, width: 8, height: 8, bytes: 4)
        switch AnswerCheck.verify(answer, for: job, sealingIn: "/proc", sniffer: { nil }) {
        case .success: Issue.record("an output that could not be sealed was accepted")
        case .failure(let reason): #expect(reason.code == .ioError && reason.message.contains("could not be sealed"), "\(reason)")
        }
        #expect((try? AnswerCheck.verify(answer, for: job, sealingIn: scratch.path, sniffer: { nil }).get()) != nil)
        // Without a directory to seal in (the inspector's and in-process decoding), the file is read as it is.
        #expect(try AnswerCheck.facts(of: output, hashing: true, sealingIn: nil).get().copy == nil)
    }

    private func sha256Hex(_ data: Data) -> String {
        let digest = SHA256Digest()
        data.withUnsafeBytes { digest.update($0) }
        return (try? digest.finalizeHex()) ?? ""
    }
}
