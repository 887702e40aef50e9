import Foundation
import Testing
@testable import AttachFetch

/// `ready` means it plays (docs/media.md#what-ios-plays): video made here by FFmpeg's own
/// encoders, each verdict checked against what ffprobe reads of the file delivered.
@Suite struct PlayabilityTests {
    /// Makes `name` in `directory` with the ffmpeg program from a test pattern.
    static func make(_ directory: String, _ name: String, _ encoding: [String]) throws {
        let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10",
                                                "-t", "1"] + encoding + ["\(directory)/\(name)"])
        try #require(made.status == 0, "ffmpeg \(encoding): \(made.errors)")
    }

    /// What ffprobe reads of the first video stream: codec, profile, tag, sample format.
    static func videoStream(_ file: String) async throws -> [String: String] {
        let read = try await tool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                 "stream=codec_name,profile,codec_tag_string,pix_fmt", "-of", "compact=p=0", file])
        return Dictionary(read.output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|").map {
            let parts = $0.split(separator: "=", maxSplits: 1).map(String.init)
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }) { first, _ in first }
    }

    @Test func onlyVideoIOSPlaysIsReadyAndTheRestSaysWhatItIs() async throws {
        let media = Scratch(), scratch = Scratch()
        let cases: [(name: String, encoding: [String], refusal: String?)] = [
            ("high.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p"], nil),
            ("baseline.mp4", ["-c:v", "libx264", "-profile:v", "baseline", "-pix_fmt", "yuv420p"], nil),
            ("h444.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv444p"], "H.264 High 4:4:4 Predictive, which iOS cannot play"),
            ("h10.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p10le"], "H.264 High 10, which iOS cannot play"),
            ("h422.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv422p"], "H.264 High 4:2:2, which iOS cannot play"),
            ("hev1.mp4", ["-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p"], "HEVC tagged hev1"),
            ("hvc1.mp4", ["-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p", "-tag:v", "hvc1"], nil),
            ("main10.mp4", ["-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p10le", "-tag:v", "hvc1"], nil),
            ("rext.mp4", ["-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv444p", "-tag:v", "hvc1"], "which iOS cannot play"),
            ("hevc.mov", ["-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p"], nil),
            ("av1.mp4", ["-c:v", "libaom-av1", "-cpu-used", "8", "-pix_fmt", "yuv420p"], "the AV1 codec"),
        ]
        // Encoding blocks: off the cooperative pool.
        try await offPool { for item in cases { try Self.make(media.path, item.name, item.encoding) } }
        // Converting off: what iOS cannot play is refused, saying what it is.
        try await withPipeline(scratch, { $0.normalize = false }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(cases.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0.name)") })
                for (item, d) in zip(cases, batch.attachments) where !item.name.hasSuffix(".mov") {
                    let source = try await Self.videoStream("\(media.path)/\(item.name)")
                    if let refusal = item.refusal {
                        #expect(d.status == .rejected && d.reason?.code == .unsupportedType, "\(item.name): \(d.status) \(d.reason?.message ?? "")")
                        #expect(d.reason?.message.contains(refusal) == true, "\(item.name): \(d.reason?.message ?? "")")
                        #expect(d.reason?.message.contains("lib") == false, "a codec, not a library: \(d.reason?.message ?? "")")
                        // The independent reader agrees it is not what iOS plays.
                        #expect(try RealWorldCorpusTests.notPlayableByFFprobe("\(media.path)/\(item.name)")
                                || source["codec_name"] == "av1", "\(item.name): \(source)")
                        continue
                    }
                    #expect(d.status == .ready, "\(item.name): \(d.reason?.message ?? "")")
                    let file = try #require(d.file, "\(item.name)")
                    let delivered = try await Self.videoStream(file)
                    #expect(try !RealWorldCorpusTests.notPlayableByFFprobe(file), "\(item.name) delivered as \(delivered)")
                    #expect(delivered["codec_name"] == source["codec_name"], "no re-encoding: \(delivered)")
                    if delivered["codec_name"] == "hevc" {
                        #expect(delivered["codec_tag_string"] == "hvc1", "\(item.name) delivered as \(delivered)")
                    }
                }
            }
        }
        // Converting on (the default): every one is delivered playing, HEVC tagged hev1 re-tagged
        // without re-encoding, the rest re-encoded to H.264 High 8-bit 4:2:0.
        try await withPipeline(Scratch()) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(cases.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0.name)") },
                                                   deadline: .seconds(60))
                for (item, d) in zip(cases, batch.attachments) {
                    #expect(d.status == .ready, "\(item.name): \(d.reason?.message ?? "")")
                    let file = try #require(d.file, "\(item.name)")
                    let source = try await Self.videoStream("\(media.path)/\(item.name)"), delivered = try await Self.videoStream(file)
                    #expect(try !RealWorldCorpusTests.notPlayableByFFprobe(file), "\(item.name) delivered as \(delivered)")
                    #expect(d.videoCodec == delivered["codec_name"] && d.thumbnail != nil, "\(item.name): \(d.videoCodec ?? "-")")
                    switch (item.refusal, item.name) {
                    case (nil, "hevc.mov"):
                        #expect(d.transforms == [.remuxed] && delivered["codec_tag_string"] == "hvc1", "\(item.name): \(delivered)")
                    case (nil, _):
                        #expect(d.transforms == [], "\(item.name): delivered as it is")
                    case (_, "hev1.mp4"):
                        #expect(d.transforms == [.remuxed] && delivered["codec_name"] == "hevc" && delivered["codec_tag_string"] == "hvc1",
                                "\(item.name): re-tagged, not re-encoded: \(delivered)")
                    default:
                        #expect(d.transforms == [.transcoded] && delivered["codec_name"] == "h264" && delivered["profile"] == "High"
                                && delivered["pix_fmt"] == "yuv420p", "\(item.name): \(delivered)")
                        #expect(d.sourceVideoCodec?.isEmpty == false && source["codec_name"] != nil, "\(item.name)")
                    }
                }
            }
        }
    }
}
