import Foundation
import Testing
@testable import AttachFetch
@testable import AttachFetchDecoderKeeper

/// Video iOS does not play (WebM and Matroska: VP8, VP9, AV1) is delivered as H.264 High
/// (Constrained Baseline where the speed ladder takes `ultrafast`), 8-bit 4:2:0, with AAC-LC, in MPEG-4 with `moov` first: made here by FFmpeg's own encoders,
/// each result checked with ffprobe.
@Suite struct VideoTranscodeTests {
    static func make(_ directory: String, _ name: String, size: String, seconds: Int, audio: Bool, _ encoding: [String]) throws {
        let sound = audio ? ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"] : []
        let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=25"]
                            + sound + ["-t", "\(seconds)"] + encoding + ["\(directory)/\(name)"])
        try #require(made.status == 0, "ffmpeg \(encoding): \(made.errors)")
    }

    /// ffprobe's view: each stream's fields (`v.codec_name`, `a.profile`, ...) and `duration`.
    static func streams(_ file: String) async throws -> [String: String] {
        let read = try await tool("/usr/bin/ffprobe", ["-v", "error", "-show_entries",
                                                 "stream=codec_type,codec_name,profile,pix_fmt,codec_tag_string,width,height:format=duration",
                                                 "-of", "compact=p=0", file])
        var fields: [String: String] = [:]
        for line in read.output.split(separator: "\n") {
            let pairs = line.split(separator: "|").compactMap { field -> (String, String)? in
                let parts = field.split(separator: "=", maxSplits: 1).map(String.init)
                return parts.count == 2 ? (parts[0], parts[1]) : nil
            }
            let prefix = pairs.first { $0.0 == "codec_type" }.map { String($0.1.prefix(1)) + "." } ?? ""
            for (key, value) in pairs { fields[prefix + key] = value }
        }
        return fields
    }

    @Test func webMAndMatroskaBecomeH264AndAACInMPEG4ThatPlays() async throws {
        let media = Scratch(), scratch = Scratch()
        let cases: [(name: String, size: String, audio: Bool, encoding: [String], video: String, sound: String?)] = [
            ("vp9-opus.webm", "1920x1080", true, ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-c:a", "libopus"], "VP9", "Opus"),
            ("vp8-vorbis.webm", "640x360", true, ["-c:v", "libvpx", "-deadline", "realtime", "-c:a", "libvorbis"], "VP8", "Vorbis"),
            ("av1.mkv", "320x240", false, ["-c:v", "libaom-av1", "-cpu-used", "8", "-pix_fmt", "yuv420p"], "AV1", nil),
            ("theora.ogv", "320x240", true, ["-c:v", "libtheora", "-c:a", "libvorbis"], "Theora", "Vorbis"),
            ("wmv.wmv", "320x240", true, ["-c:v", "wmv2", "-c:a", "wmav2", "-f", "asf"], "WMV 8", "WMA 2"),
            ("spark.flv", "320x240", true, ["-c:v", "flv", "-c:a", "libmp3lame", "-ar", "44100"], "Sorenson Spark", "MP3"),
        ]
        try await offPool { for item in cases { try Self.make(media.path, item.name, size: item.size, seconds: 2, audio: item.audio, item.encoding) } }
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(cases.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0.name)") },
                                                   deadline: .seconds(60))
                for (item, d) in zip(cases, batch.attachments) {
                    #expect(d.status == .ready, "\(item.name): \(d.reason?.message ?? "")")
                    #expect(d.kind == .video && d.mimeType == "video/mp4" && d.transforms == [.transcoded], "\(item.name): \(d.transforms ?? [])")
                    #expect(d.sourceVideoCodec == item.video && d.sourceAudioCodec == item.sound && d.videoCodec == "h264"
                            && d.audioCodec == (item.sound == nil ? nil : "aac"), "\(item.name)")
                    let file = try #require(d.file, "\(item.name)")
                    let read = try await Self.streams(file)
                    // High; Constrained Baseline when the speed ladder took ultrafast on a busy
                    // machine (docs/media.md).
                    #expect(read["v.codec_name"] == "h264" && ["High", "Constrained Baseline"].contains(read["v.profile"]) && read["v.pix_fmt"] == "yuv420p"
                            && read["v.codec_tag_string"] == "avc1", "\(item.name): \(read)")
                    if item.sound != nil { #expect(read["a.codec_name"] == "aac" && read["a.profile"] == "LC", "\(item.name): \(read)") }
                    #expect(try !RealWorldCorpusTests.notPlayableByFFprobe(file))
                    let longEdge = max(Int(read["v.width"] ?? "") ?? 0, Int(read["v.height"] ?? "") ?? 0)
                    let source = try await Self.streams("\(media.path)/\(item.name)")
                    let sourceEdge = max(Int(source["v.width"] ?? "") ?? 0, Int(source["v.height"] ?? "") ?? 0)
                    #expect(longEdge == min(1280, sourceEdge), "\(item.name): \(longEdge) from \(sourceEdge)")
                    let duration = try #require(Double(read["duration"] ?? "")), sourceDuration = try #require(Double(source["duration"] ?? ""))
                    #expect(abs(duration - sourceDuration) <= 0.3, "\(item.name): \(duration) s from \(sourceDuration) s")
                    let boxes = try AudioTranscodeTests.topLevelBoxes(file)
                    #expect((boxes.firstIndex(of: "moov") ?? .max) < (boxes.firstIndex(of: "mdat") ?? -1), "\(item.name): \(boxes)")
                    #expect(d.thumbnail != nil, "\(item.name): a poster from the delivered file")
                }
            }
        }
    }

    /// Matroska whose streams iOS plays (H.264 and AAC) needs only another container: its
    /// streams are copied into MPEG-4, not re-encoded.
    @Test func matroskaWithStreamsIOSPlaysIsRemuxedNotReencoded() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.make(media.path, "h264-aac.mkv", size: "640x360", seconds: 3, audio: true,
                          ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac"])
        }
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/h264-aac.mkv")]).attachments[0]
                #expect(d.status == .ready && d.mimeType == "video/mp4" && d.transforms == [.remuxed], "\(d.transforms ?? []) \(d.reason?.message ?? "")")
                let file = try #require(d.file)
                // The same H.264 bytes: a copy keeps the encoder's own profile and size.
                let read = try await Self.streams(file), source = try await Self.streams("\(media.path)/h264-aac.mkv")
                #expect(read["v.codec_name"] == "h264" && read["v.profile"] == source["v.profile"] && read["v.width"] == "640", "\(read)")
                #expect(read["a.codec_name"] == "aac", "\(read)")
                #expect(read["v.codec_tag_string"] == "avc1" && read["v.pix_fmt"] == "yuv420p", "\(read)")
                let boxes = try AudioTranscodeTests.topLevelBoxes(file)
                #expect((boxes.firstIndex(of: "moov") ?? .max) < (boxes.firstIndex(of: "mdat") ?? -1), "\(boxes)")
                let duration = try #require(Double(read["duration"] ?? "")), sourceDuration = try #require(Double(source["duration"] ?? ""))
                #expect(abs(duration - sourceDuration) <= 0.3, "\(duration) s from \(sourceDuration) s")
                #expect(try !RealWorldCorpusTests.notPlayableByFFprobe(file))
            }
        }
    }

    @Test func aClipLongerThanTheLimitIsCutToAPlayableStartAndSaysSo() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.make(media.path, "long.webm", size: "640x360", seconds: 12, audio: true,
                          ["-c:v", "libvpx", "-deadline", "realtime", "-b:v", "2M", "-c:a", "libopus"])
        }
        let limit: Int64 = 600_000
        try await withPipeline(scratch, { $0.sizeLimits.video = limit }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/long.webm", pipeline, deadline: .seconds(60))
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                #expect(d.transforms?.first == .transcoded, "\(d.transforms ?? [])")
                let file = try #require(d.file)
                #expect(Int64(fileSize(file)) <= limit, "\(fileSize(file)) bytes over \(limit)")
                let read = try await Self.streams(file)
                let duration = try #require(Double(read["duration"] ?? ""))
                #expect(duration > 1 && duration <= 12.1, "\(duration) s")
                if d.transforms == [.transcoded, .trimmed] { #expect(duration < 11.5, "trimmed, yet \(duration) s") }
                #expect(try await tool("/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", file, "-f", "null", "-"]).status == 0)
                #expect(try !RealWorldCorpusTests.notPlayableByFFprobe(file))
            }
        }
    }

    @Test func aTruncatedWebMIsRefusedClearlyAndLeavesNothing() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.make(media.path, "whole.webm", size: "320x240", seconds: 2, audio: true,
                          ["-c:v", "libvpx", "-deadline", "realtime", "-c:a", "libopus"])
        }
        let whole = try Data(contentsOf: URL(fileURLWithPath: "\(media.path)/whole.webm"))
        try whole.prefix(600).write(to: URL(fileURLWithPath: "\(media.path)/cut.webm"))
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/cut.webm", pipeline)
                #expect(d.status == .rejected && [.corruptMedia, .unsupportedType].contains(d.reason?.code), "\(d.status) \(d.reason?.message ?? "")")
                #expect(d.reason?.message.isEmpty == false && d.file == nil)
            }
        }
        #expect(scratch.tree() == [], "\(scratch.tree())")
    }

    /// Audio and video workers hold `videoDecoderMemoryLimit` of data (1 GiB: a 4K AV1
    /// transcode held 525-560 MB, past the image workers' 512 MiB, and failed there), image
    /// workers `decoderMemoryLimit`, each read from the kernel; and a transcode that runs out of
    /// memory under that limit says which limit it was.
    @Test func audioAndVideoWorkersHaveTheirOwnMemoryLimit() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.make(media.path, "vp9.webm", size: "1920x1080", seconds: 2, audio: false,
                          ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8"])
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.videoDecoderMemoryLimit = 48 << 20 }) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/vp9.webm", pipeline)
                #expect(d.status != .ready && d.reason?.code == .ioError && d.reason?.message.contains("may hold 48 MiB of data") == true,
                        "\(d.status) \(d.reason?.code.rawValue ?? "") \(d.reason?.message ?? "")")
                // Our limit, not the media's fault: reused only briefly.
                #expect(d.reason?.endedByOwnLimit == true)
            }
        }
        try await withMediaServer { server in
            try await withPipeline(scratch, { $0.imageWorkersStartWithPipeline = true }) { pipeline in
                let batch = await pipeline.process(["photo.jpg", "clip.mp4"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") },
                                                   deadline: .seconds(20))
                #expect(batch.attachments.allSatisfy { $0.status == .ready })
                let limits = Set(TestProcess.decoderWorkers().compactMap { pid -> Int? in
                    let table = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
                    return table.flatMap { ConfinementCheck.limit($0, "Max data size")?.0 }
                })
                let defaults = AttachFetchConfiguration()
                // Other suites' pipelines may have workers too (this process's children all).
                #expect(limits.isSuperset(of: [defaults.decoderMemoryLimit, defaults.videoDecoderMemoryLimit]), "\(limits)")
            }
        }
    }
}

