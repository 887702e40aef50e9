import Foundation
import Testing
@testable import AttachFetch

/// An MP3 longer than the audio limit (a podcast, a voice memo) is cut after the last whole
/// frame that fits, not refused: a prefix of Layer III frames plays, behind an Xing header whose
/// frame count is the frames kept. Made here by libmp3lame, read back with ffprobe.
@Suite struct MP3CutTests {
    /// The Xing (or Info) header of an MP3's first frame: its frame and byte counts.
    static func xing(_ file: String) throws -> (frames: Int, bytes: Int)? {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)).prefix(4096))
        let marks = [Array("Xing".utf8), Array("Info".utf8)]
        guard let at = (0..<max(0, data.count - 16)).first(where: { marks.contains(Array(data[$0..<$0 + 4])) }) else { return nil }
        let word = { (offset: Int) in data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) } }
        let flags = word(at + 4)
        guard flags & 3 == 3 else { return nil }
        return (word(at + 8), word(at + 12))
    }

    /// The byte position of every audio packet (frame) ffprobe reads, in order.
    static func framePositions(_ file: String) async throws -> [Int] {
        let read = try await tool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pos",
                                                       "-of", "csv=p=0", file])
        try #require(read.status == 0, "\(read.errors)")
        // A packet with side data (the first: samples to skip) has a second, empty field.
        return read.output.split(separator: "\n").compactMap { $0.split(separator: ",").first.flatMap { Int($0) } }
    }

    static func make(_ directory: String, _ name: String, seconds: Int, _ encoding: [String]) throws {
        let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                                                "sine=frequency=440:sample_rate=44100:duration=\(seconds)",
                                                "-f", "lavfi", "-i", "anoisesrc=d=\(seconds):a=0.05:sample_rate=44100",
                                                "-filter_complex", "amerge=inputs=2", "-c:a", "libmp3lame"] + encoding + ["\(directory)/\(name)"])
        try #require(made.status == 0, "ffmpeg \(encoding): \(made.errors)")
    }

    /// A 10-minute 128 kb/s MP3 (9.6 MB) and a VBR one (about 8 MB), against the default 5 MiB.
    @Test func aTenMinuteMP3IsCutAfterTheLastWholeFrameThatFits() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.make(media.path, "podcast.mp3", seconds: 600, ["-b:a", "128k"])
            try Self.make(media.path, "memo.mp3", seconds: 600, ["-q:a", "2"])
        }
        let limit = AttachFetchConfiguration().sizeLimits.audio
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                for name in ["podcast.mp3", "memo.mp3"] {
                    let source = "\(media.path)/\(name)"
                    #expect(fileSize(source) > limit, "\(name): the source must be over the limit")
                    let d = await fetchOne("\(server.baseURL)/media/\(name)", pipeline)
                    #expect(d.status == .ready && d.mimeType == "audio/mpeg" && d.transforms == [.trimmed],
                            "\(name): \(d.status) \(d.reason?.message ?? "") \(d.transforms ?? [])")
                    let file = try #require(d.file, "\(name)")
                    let bytes = fileSize(file)
                    // The largest MPEG-1 Layer III frame at 44.1 kHz is 1,045 bytes (320 kb/s, padded).
                    #expect(bytes <= limit && limit - bytes < 1_045, "\(name): \(bytes) bytes for a limit of \(limit)")
                    #expect(d.bytes == bytes)

                    let kept = try await Self.framePositions(file)
                    let header = try #require(try Self.xing(file), "\(name): no Xing header with frame and byte counts")
                    #expect(header.frames == kept.count, "\(name): the Xing header says \(header.frames) frames, \(kept.count) are there")
                    #expect(abs(header.bytes - Int(bytes)) <= 1_045, "\(name): the Xing header says \(header.bytes) bytes of \(bytes)")
                    // The frames kept are the source's first frames, byte for byte.
                    let sourceFrames = try await Self.framePositions(source)
                    let (delivered, original) = (try Data(contentsOf: URL(fileURLWithPath: file)), try Data(contentsOf: URL(fileURLWithPath: source)))
                    let (first, sourceFirst) = (try #require(kept.first), try #require(sourceFrames.first))
                    #expect(delivered[first...] == original[sourceFirst..<sourceFirst + delivered.count - first], "\(name): not a prefix of the source's frames")

                    let expected = Double(kept.count * 1152) / 44_100
                    let probed = try #require(Double(try await AudioTranscodeTests.audio(file)["duration"] ?? ""))
                    #expect(abs(probed - expected) < 0.1, "\(name): ffprobe says \(probed) s for \(kept.count) frames (\(expected) s)")
                    #expect(d.duration.map { abs($0 - expected) < 0.1 } == true, "\(name): \(d.duration ?? -1) s described for \(expected) s")
                }
            }
        }
    }

    /// The `Content-Length` is held to the MP3 source limit (the larger of the audio and video
    /// limits), not the audio limit; past it, and with converting off, the MP3 is refused.
    @Test func theSourceLimitBoundsWhatIsCutAndConvertingOffRefuses() async throws {
        let media = Scratch(), scratch = Scratch()
        // 128 kb/s: 60 s is about 960 KB, 120 s about 1.9 MB.
        try await offPool {
            try Self.make(media.path, "minute.mp3", seconds: 60, ["-b:a", "128k"])
            try Self.make(media.path, "two.mp3", seconds: 120, ["-b:a", "128k"])
        }
        let configure = { (c: inout AttachFetchConfiguration) in
            c.sizeLimits.audio = 400_000
            c.sizeLimits.video = 1_500_000
        }
        try await withPipeline(scratch, configure) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(["minute.mp3", "two.mp3"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") })
                let (minute, two) = (batch.attachments[0], batch.attachments[1])
                #expect(minute.status == .ready && minute.transforms == [.trimmed] && (minute.bytes ?? .max) <= 400_000,
                        "\(minute.reason?.message ?? "") \(minute.bytes ?? -1)")
                #expect(minute.duration.map { $0 > 20 && $0 < 26 } == true, "\(minute.duration ?? -1) s of 400 KB at 128 kb/s")
                #expect(two.status == .rejected && two.reason?.code == .sizeLimitExceeded
                        && two.reason?.message.contains("MP3 source limit of 1500000") == true, "\(two.reason?.message ?? "ready")")
            }
        }
        try await withPipeline(Scratch(), { configure(&$0); $0.normalize = false }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/minute.mp3", pipeline)
                #expect(d.status == .rejected && d.reason?.code == .sizeLimitExceeded, "\(d.reason?.message ?? "ready")")
            }
        }
    }
}
