import Foundation
import Testing
@testable import AttachFetch

/// The payload lint that App Transport Security's verdict feeds: the exception an app would need.
@Suite struct ATSLintTests {
    @Test func lintWarnsWithTheExceptionAnAppWouldNeed() throws {
        let payload = try PushPayload(data: Data(#"{"aps": {"alert": "hi", "mutable-content": 1}, "image": "http://cdn.example/a.jpg"}"#.utf8))
        let media = payload.media()
        #expect(media.count == 1)
        var descriptor = AttachmentDescriptor(identifier: "a", url: "http://cdn.example/a.jpg", status: .ready, timings: .init(total: 1))
        descriptor.ats = ATSVerdict(problems: [.init(code: ATSVerdict.insecureScheme, message: "the URL is plain http")])
        let findings = payload.lint(media: media, descriptors: [descriptor])
        let ats = try #require(findings.first { $0.code == "atsNotCompliant" })
        #expect(ats.severity == .warning)
        #expect(ats.message.contains("NSExceptionDomains → cdn.example → { NSExceptionAllowsInsecureHTTPLoads = YES }"), "\(ats.message)")
        #expect(ats.path == media[0].path)
        descriptor.ats = ATSVerdict(problems: [])
        #expect(!payload.lint(media: media, descriptors: [descriptor]).contains { $0.code == "atsNotCompliant" })
    }
}
