@testable import AttachFetch
@testable import AttachFetchService
import Foundation
import Testing

/// A campaign that sends one WebM to many phones transcodes it once: twelve concurrent calls to
/// the service for one URL make one origin request and one transcode, and all get the same file.
@Suite struct TranscodeOnceTests {
    @Test func twelveConcurrentCallsForOneWebMMakeOneRequestAndOneTranscode() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try VideoTranscodeTests.make(media.path, "campaign.webm", size: "640x360", seconds: 3, audio: true,
                                         ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-c:a", "libopus"])
        }
        let origin = try CachingOrigin(directory: media.path)
        defer { origin.shutdown() }
        let service = try await RunningServer.start(scratch)
        let before = service.server.pipeline.decodesStarted.probes
        let body = #"{"urls": ["\#(origin.url("campaign.webm"))"], "deadlineMs": 60000}"#
        let answers = try await withThrowingTaskGroup(of: Exchange.self) { group in
            for _ in 0..<12 { group.addTask { try await Exchange.post("\(service.base)/v1/attachments", json: body) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let descriptors = answers.compactMap { ($0.json["attachments"] as? [[String: Any]])?.first }
        #expect(answers.allSatisfy { $0.status == 200 } && descriptors.count == 12)
        #expect(descriptors.allSatisfy { $0["status"] as? String == "ready" && $0["sourceVideoCodec"] as? String == "VP9" },
                "\(descriptors.map { $0["reason"] ?? $0["status"] ?? "-" })")
        #expect(Set(descriptors.compactMap { $0["sha256"] as? String }).count == 1, "one result, one file")
        #expect(origin.requests("campaign.webm") == 1, "\(origin.requests("campaign.webm")) origin requests")
        // One transcode and one probe of its result, on the probe workers.
        #expect(service.server.pipeline.decodesStarted.probes - before == 2,
                "\(service.server.pipeline.decodesStarted.probes - before) probe-worker jobs for one URL")
        await service.stop()
    }
}
