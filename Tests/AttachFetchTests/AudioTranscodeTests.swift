import Foundation
import Testing
@testable import AttachFetch

/// Audio iOS does not play (Opus and Vorbis in Ogg, FLAC) is delivered as AAC-LC in MPEG-4
/// audio, `moov` first, checked with ffprobe: made here by FFmpeg's own encoders.
@Suite struct AudioTranscodeTests {
    /// The top-level box types of an MPEG-4 file, in order.
    static func topLevelBoxes(_ file: String) throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        var boxes: [String] = [], offset = 0
        while offset + 8 <= data.count {
            var size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: data[offset + 4..<offset + 8], as: UTF8.self)
            if size == 1, offset + 16 <= data.count { size = data[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
            guard size >= 8 else { break }
            boxes.append(type)
            offset += size
        }
        return boxes
    }

    /// ffprobe's view of the first audio stream and the container's duration.
    static func audio(_ file: String) async throws -> [String: String] {
        let read = try await tool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries",
                                                 "stream=codec_name,profile,sample_rate,channels:format=duration,format_name", "-of", "compact=p=0", file])
        var fields: [String: String] = [:]
        for line in read.output.split(separator: "\n") {
            for field in line.split(separator: "|") {
                let parts = field.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { fields[parts[0]] = parts[1] }
            }
        }
        return fields
    }

    static func make(_ directory: String, _ name: String, seconds: Int, _ encoding: [String]) throws {
        let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                                                "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
                                                "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=48000:duration=\(seconds)",
                                                "-filter_complex", "amerge=inputs=2"] + encoding + ["\(directory)/\(name)"])
        try #require(made.status == 0, "ffmpeg \(encoding): \(made.errors)")
    }

    @Test func opusVorbisFLACAC3AndWMABecomeAACInMPEG4AudioThatPlaysAndADTSIsRemuxed() async throws {
        let media = Scratch(), scratch = Scratch()
        let cases: [(name: String, encoding: [String], codec: String, sniffed: String, transform: AttachmentDescriptor.Transform)] = [
            ("voice.opus", ["-ac", "1", "-c:a", "libopus", "-b:a", "24k"], "Opus", "audio/ogg", .transcoded),
            ("voice-note.ogg", ["-ac", "1", "-c:a", "libopus"], "Opus", "audio/ogg", .transcoded),
            ("music.ogg", ["-c:a", "libvorbis"], "Vorbis", "audio/ogg", .transcoded),
            ("music.flac", ["-ar", "44100", "-c:a", "flac"], "FLAC", "audio/flac", .transcoded),
            ("music.ac3", ["-c:a", "ac3", "-f", "ac3"], "AC-3", "audio/ac3", .transcoded),
            ("music.wma", ["-ar", "44100", "-c:a", "wmav2", "-f", "asf"], "WMA 2", "video/x-ms-asf", .transcoded),
            // AAC in ADTS needs only another container: its stream is copied, not re-encoded.
            ("music.aac", ["-c:a", "aac", "-f", "adts"], "AAC", "audio/aac", .remuxed),
        ]
        try await offPool { for item in cases { try Self.make(media.path, item.name, seconds: 3, item.encoding) } }
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(cases.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0.name)") })
                for (item, d) in zip(cases, batch.attachments) {
                    #expect(d.status == .ready, "\(item.name): \(d.reason?.message ?? "")")
                    #expect(d.kind == .audio && d.mimeType == "audio/mp4" && d.fileExtension == "m4a", "\(item.name): \(d.mimeType ?? "-")")
                    #expect(d.transforms == [item.transform] && (item.transform == .remuxed || d.sourceAudioCodec == item.codec) && d.audioCodec == "aac",
                            "\(item.name): \(d.transforms ?? []) \(d.sourceAudioCodec ?? "-") \(d.audioCodec ?? "-")")
                    let file = try #require(d.file, "\(item.name)")
                    let read = try await Self.audio(file)
                    #expect(read["codec_name"] == "aac" && read["profile"] == "LC", "\(item.name): \(read)")
                    let source = try await Self.audio("\(media.path)/\(item.name)")
                    let duration = try #require(Double(read["duration"] ?? ""), "\(read)")
                    let sourceDuration = try #require(Double(source["duration"] ?? ""), "\(source)")
                    #expect(abs(duration - sourceDuration) <= 0.3, "\(item.name): \(duration) s from \(sourceDuration) s")
                    #expect(read["channels"] == source["channels"], "\(item.name): \(read) from \(source)")
                    let boxes = try Self.topLevelBoxes(file)
                    let moov = try #require(boxes.firstIndex(of: "moov")), mdat = try #require(boxes.firstIndex(of: "mdat"))
                    #expect(moov < mdat, "\(item.name): \(boxes)")
                    #expect(try await tool("/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", file, "-f", "null", "-"]).status == 0)
                    #expect(d.sourceMimeType == item.sniffed, "\(item.name): \(d.sourceMimeType ?? "-")")
                    #expect(d.bytes == Int64(fileSize(file)) && d.sourceBytes == Int64(fileSize("\(media.path)/\(item.name)")))
                }
            }
        }
    }

    @Test func aSourceLongerThanTheLimitIsCutToFitAndSaysSo() async throws {
        let media = Scratch(), scratch = Scratch()
        // 60 s of stereo at 64 kb/s a channel is about 960 KB: a 400 KB limit holds about 25 s.
        // WMA comes in ASF, a video container: sound alone in it is held to the audio limit too.
        try await offPool {
            try Self.make(media.path, "long.flac", seconds: 60, ["-c:a", "flac"])
            try Self.make(media.path, "long.wma", seconds: 60, ["-ar", "44100", "-c:a", "wmav2", "-f", "asf"])
        }
        let limit: Int64 = 400_000
        try await withPipeline(scratch, { $0.sizeLimits.audio = limit }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                for name in ["long.flac", "long.wma"] {
                    let d = await fetchOne("\(server.baseURL)/media/\(name)", pipeline)
                    #expect(d.status == .ready && d.kind == .audio, "\(name): \(d.reason?.message ?? "")")
                    #expect(d.transforms == [.transcoded, .trimmed], "\(name): \(d.transforms ?? [])")
                    let file = try #require(d.file)
                    #expect(Int64(fileSize(file)) <= limit, "\(name): \(fileSize(file)) bytes over \(limit)")
                    let duration = try #require(Double(try await Self.audio(file)["duration"] ?? ""))
                    #expect(duration > 15 && duration < 59, "\(name): \(duration) s delivered")
                    #expect(d.duration.map { abs($0 - duration) < 0.3 } == true, "\(name): \(d.duration ?? -1) against ffprobe's \(duration)")
                }
            }
        }
    }

    /// A raw AMR file: its magic line, then `frames` frames of type `frameType` (12.2 kb/s for
    /// AMR-NB, 23.85 kb/s for AMR-WB), 20 ms each, their speech bits random (any bits decode).
    /// Debian's FFmpeg decodes AMR but cannot encode it, so the file is written here.
    static func rawAMR(wideband: Bool, frames: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        let (magic, frameType, size) = wideband ? ("#!AMR-WB\n", 8, 61) : ("#!AMR\n", 7, 32)
        var data = Data(magic.utf8)
        for _ in 0..<frames {
            data.append(UInt8(frameType << 3 | 0x04))
            data.append(contentsOf: (1..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        return data
    }

    /// Raw AMR-NB and AMR-WB voice notes (what Android's recorders write) become AAC in MPEG-4
    /// audio, as the same stream inside 3GPP does; their length is kept.
    @Test func rawAMRVoiceNotesBecomeAAC() async throws {
        let media = Scratch(), scratch = Scratch()
        try Self.rawAMR(wideband: false, frames: 150).write(to: URL(fileURLWithPath: "\(media.path)/note.amr"))
        try Self.rawAMR(wideband: true, frames: 150).write(to: URL(fileURLWithPath: "\(media.path)/note-wb.amr"))
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let names = ["note.amr", "note-wb.amr"]
                let batch = await pipeline.process(names.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") })
                for (name, d) in zip(names, batch.attachments) {
                    #expect(d.status == .ready && d.sourceMimeType == "audio/amr" && d.mimeType == "audio/mp4", "\(name): \(d.reason?.message ?? "")")
                    #expect(d.transforms == [.transcoded] && d.audioCodec == "aac" && d.sourceAudioCodec?.hasPrefix("AMR") == true,
                            "\(name): \(d.transforms ?? []) \(d.sourceAudioCodec ?? "-")")
                    let file = try #require(d.file, "\(name)")
                    let read = try await Self.audio(file)
                    let duration = try #require(Double(read["duration"] ?? ""), "\(read)")
                    #expect(abs(duration - 3) <= 0.1 && abs((d.duration ?? 0) - 3) <= 0.1, "\(name): \(duration) s, described \(d.duration ?? 0) s, for 3 s")
                }
            }
        }
    }

    @Test func withTranscodingOffWhatMustBeReencodedIsRefusedSayingSo() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.make(media.path, "note.ogg", seconds: 2, ["-ac", "1", "-c:a", "libopus"])
            try PlayabilityTests.make(media.path, "h444.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv444p"])
            try PlayabilityTests.make(media.path, "hev1.mp4", ["-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p"])
            try PlayabilityTests.make(media.path, "vp9.mp4", ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8"])
        }
        try await withPipeline(scratch, { $0.transcode = false }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(["note.ogg", "h444.mp4", "hev1.mp4", "vp9.mp4"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") })
                let (note, h444, hev1) = (batch.attachments[0], batch.attachments[1], batch.attachments[2])
                // A codec only the transcoder decodes is refused as what it is.
                let vp9 = batch.attachments[3]
                #expect(vp9.status == .rejected && vp9.reason?.code == .unsupportedType
                        && vp9.reason?.message.contains("the video is VP9") == true && vp9.reason?.message.contains("transcoding is off") == true,
                        "\(vp9.reason?.message ?? "ready")")
                #expect(h444.reason?.message.contains("transcoding is off") == true, "\(h444.reason?.message ?? "ready")")
                #expect(note.status == .rejected && note.reason?.code == .unsupportedType
                        && note.reason?.message.contains("transcoding it is turned off") == true, "\(note.reason?.message ?? "ready")")
                #expect(h444.status == .rejected && h444.reason?.message.contains("High 4:4:4 Predictive") == true, "\(h444.reason?.message ?? "ready")")
                // Re-tagging is not re-encoding: still done.
                #expect(hev1.status == .ready && hev1.transforms == [.remuxed], "\(hev1.reason?.message ?? "") \(hev1.transforms ?? [])")
            }
        }
    }

    @Test func aCorruptOpusFileIsRefusedClearlyAndLeavesNothing() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool { try Self.make(media.path, "good.opus", seconds: 3, ["-ac", "1", "-c:a", "libopus"]) }
        // The Ogg pages kept, every Opus packet after the headers overwritten with noise.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(media.path)/good.opus")))
        var random = SystemRandomNumberGenerator()
        for index in stride(from: 400, to: bytes.count, by: 1) where index % 7 != 0 { bytes[index] = UInt8.random(in: 0...255, using: &random) }
        try Data(bytes).write(to: URL(fileURLWithPath: "\(media.path)/corrupt.opus"))
        try Data(bytes.prefix(300)).write(to: URL(fileURLWithPath: "\(media.path)/truncated.opus"))
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(["corrupt.opus", "truncated.opus"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") })
                for d in batch.attachments {
                    #expect(d.status == .rejected && [.corruptMedia, .unsupportedType].contains(d.reason?.code), "\(d.url): \(d.status) \(d.reason?.message ?? "")")
                    #expect(d.file == nil)
                }
            }
        }
        #expect(scratch.tree() == [], "\(scratch.tree())")
    }
}
