import Testing
import AttachFetchCore
import AttachFetchDecoderProtocol

/// A decoder's message never shows the job's working paths: the downloaded file, the output
/// base and their directory mean nothing to the caller.
@Suite struct WorkingPathTests {
    @Test func aMessageLosesTheJobsPaths() {
        let reason = Reason(code: .corruptMedia, message: "cannot read /work/d/body-1: bad header; see /work/d/made-1.mp4 and /work/d/x")
        let shown = DecodeAnswer(failure: reason).withoutWorkingPaths(source: "/work/d/body-1", outputBase: "/work/d/made-1")
        #expect(shown.failure?.message == "cannot read the downloaded file: bad header; see the output file.mp4 and x")
        #expect(shown.failure?.code == .corruptMedia)
    }

    /// An empty path replaces nothing (String.replacing would put the text between every character).
    @Test func anEmptyPathReplacesNothing() {
        let reason = Reason(code: .corruptMedia, message: "bad header")
        #expect(DecodeAnswer(failure: reason).withoutWorkingPaths(source: "", outputBase: "").failure?.message == "bad header")
    }
}
