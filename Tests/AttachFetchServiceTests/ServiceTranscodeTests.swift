import AttachFetch
@testable import AttachFetchService
import Foundation
import Testing
import ServiceTestHelpers
import TestHelpers

/// The service's per-request transcoding: `transcode` and `transcodeMaxEdge` on one request
/// change what it gets, bad values are a 400 naming the field, and results made under other
/// settings are not shared.
@Suite struct ServiceTranscodeTests {
    @Test func aRequestsOwnTranscodingIsHonouredAndKeptApart() async throws {
        let scratch = Scratch()
        let service = try await RunningServer.start(scratch)
        try await withMediaServer { media in
            let url = "\(media.baseURL)/media/clip.webm"
            func one(_ fields: String) async throws -> [String: Any] {
                let answer = try await Exchange.post("\(service.base)/v1/attachments",
                                                     json: #"{"requests": [{"url": "\#(url)"\#(fields)}]}"#)
                #expect(answer.status == 200, "\(answer.text)")
                return try #require((answer.json["attachments"] as? [[String: Any]])?.first, "\(answer.text)")
            }
            let refused = try await one(#", "transcode": false"#)
            let refusedCode = (refused["reason"] as? [String: Any])?["code"] as? String
            #expect(refused["status"] as? String == "rejected" && refusedCode == "unsupportedType", "\(refused)")
            let made = try await one("")
            #expect(made["status"] as? String == "ready" && made["transforms"] as? [String] == ["transcoded"],
                    "the refusal under transcode false is not shared: \(made)")
            #expect(made["width"] as? Int == 160, "\(made)")
            let small = try await one(#", "transcodeMaxEdge": 64"#)
            #expect(small["status"] as? String == "ready" && small["width"] as? Int == 64 && small["height"] as? Int == 48, "\(small)")
            for (fields, named) in [(#", "transcodeMaxEdge": 8"#, "requests[0].transcodeMaxEdge"),
                                    (#", "transcodeMaxEdge": 1.5"#, "requests[0].transcodeMaxEdge"),
                                    (#", "transcode": "yes""#, "requests[0].transcode")] {
                let bad = try await Exchange.post("\(service.base)/v1/attachments", json: #"{"requests": [{"url": "\#(url)"\#(fields)}]}"#)
                #expect(bad.status == 400 && bad.errorCode == "invalidRequest" && bad.text.contains(named), "\(fields): \(bad.text)")
            }
        }
        await service.stop()
        #expect(scratch.tree() == [])
    }

    @Test func theLibraryRefusesAnEdgeOutOfRangeNamingIt() {
        let error = #expect(throws: AttachFetchError.self) { try TranscodeSettings(maxLongEdge: 8) }
        #expect(error.map { AttachFetchError.invalidConfiguration("") ~= $0 } == true && error?.message.contains("16 to 4096") == true)
        #expect((try? TranscodeSettings(enabled: false, maxLongEdge: 4096))?.maxLongEdge == 4096)
    }
}
