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
            ("av1.mp4", ["-c:v", "libaom-av1", "-cpu-used", "8", "-pix_fmt", "yuv420p"], "the video is AV1, which iOS cannot play"),
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
                        #expect(d.transforms == [.transcoded] && delivered["codec_name"] == "h264" && ["High", "Constrained Baseline"].contains(delivered["profile"])
                                && delivered["pix_fmt"] == "yuv420p", "\(item.name): \(delivered)")
                        #expect(d.sourceVideoCodec?.isEmpty == false && source["codec_name"] != nil, "\(item.name)")
                    }
                }
            }
        }
    }
    /// HEVC tagged hev1 may keep its parameter sets in the samples only. Re-tagged hvc1, such a
    /// file would have none in its header, where iOS reads them: it is re-encoded instead. The
    /// usual hev1, whose header has them, is still only re-tagged.
    @Test func hev1WithItsParameterSetsOnlyInTheStreamIsReEncoded() async throws {
        let media = Scratch()
        try await offPool {
            try Self.make(media.path, "inband.mp4", ["-c:v", "libx265", "-x265-params", "log-level=error:repeat-headers=1", "-pix_fmt", "yuv420p"])
            // The header's arrays keep their sizes but name no parameter set (type 63, unspecified).
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(media.path)/inband.mp4")))
            let record = try #require(Self.hvcC(in: bytes))
            #expect(Self.parameterSetTypes(bytes, record) == [32, 33, 34], "the encoder put them in the header too")
            var at = record + 23
            for _ in 0..<Int(bytes[record + 22]) {
                bytes[at] = bytes[at] & 0xC0 | 0x3F
                let count = Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
                at += 3
                for _ in 0..<count { at += 2 + (Int(bytes[at]) << 8 | Int(bytes[at + 1])) }
            }
            try Data(bytes).write(to: URL(fileURLWithPath: "\(media.path)/inband.mp4"))
            try Self.make(media.path, "outofband.mp4", ["-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p"])
        }
        // ffmpeg still decodes it (the parameter sets come in band): a file the world makes.
        #expect(try await tool("/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", "\(media.path)/inband.mp4", "-f", "null", "-"]).status == 0)
        #expect(try await Self.videoStream("\(media.path)/inband.mp4")["codec_tag_string"] == "hev1")
        try await withPipeline(Scratch()) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(["inband.mp4", "outofband.mp4"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") })
                let (inband, outofband) = (batch.attachments[0], batch.attachments[1])
                #expect(inband.status == .ready && inband.transforms == [.transcoded], "\(inband.transforms ?? []) \(inband.reason?.message ?? "")")
                let reEncoded = try await Self.videoStream(try #require(inband.file))
                #expect(reEncoded["codec_name"] == "h264" && ["High", "Constrained Baseline"].contains(reEncoded["profile"]), "\(reEncoded)")
                #expect(outofband.status == .ready && outofband.transforms == [.remuxed], "\(outofband.transforms ?? [])")
                let retagged = try [UInt8](Data(contentsOf: URL(fileURLWithPath: try #require(outofband.file))))
                let record = try #require(Self.hvcC(in: retagged))
                #expect(Self.parameterSetTypes(retagged, record) == [32, 33, 34], "the hvc1 header holds VPS, SPS and PPS")
                #expect(try await Self.videoStream(try #require(outofband.file))["codec_tag_string"] == "hvc1")
            }
        }
    }

    /// Where an `hvcC` record's payload starts in an MPEG-4 file (after the box's type).
    static func hvcC(in bytes: [UInt8]) -> Int? {
        let name = Array("hvcC".utf8)
        guard bytes.count > 4 else { return nil }
        for i in 0..<(bytes.count - 4) where Array(bytes[i..<(i + 4)]) == name { return i + 4 }
        return nil
    }

    /// The parameter-set NAL types (VPS 32, SPS 33, PPS 34) an `hvcC` record's arrays hold.
    static func parameterSetTypes(_ bytes: [UInt8], _ record: Int) -> Set<UInt8> {
        var types: Set<UInt8> = [], at = record + 23
        for _ in 0..<Int(bytes[record + 22]) {
            let type = bytes[at] & 0x3F, count = Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
            at += 3
            for _ in 0..<count { at += 2 + (Int(bytes[at]) << 8 | Int(bytes[at + 1])) }
            if count > 0, [32, 33, 34].contains(type) { types.insert(type) }
        }
        return types
    }
}
