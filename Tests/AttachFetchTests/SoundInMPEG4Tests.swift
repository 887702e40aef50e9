import Foundation
import Testing
@testable import AttachFetch

/// Sound iOS cannot play inside an MPEG-4 file (Opus, FLAC, AC-3; alone or beside H.264) is
/// transcoded to AAC-LC: the container alone does not make a file play.
@Suite struct SoundInMPEG4Tests {
    @Test func opusFLACAndAC3InMPEG4BecomeAAC() async throws {
        let media = Scratch(), scratch = Scratch()
        let cases: [(name: String, encoding: [String], codec: String)] = [
            ("opus.m4a", ["-c:a", "libopus", "-f", "mp4"], "Opus"),
            ("flac.m4a", ["-ar", "44100", "-c:a", "flac", "-strict", "-2", "-f", "mp4"], "FLAC"),
            ("ac3.m4a", ["-c:a", "ac3", "-f", "mp4"], "AC-3"),
        ]
        try await offPool { for item in cases { try AudioTranscodeTests.make(media.path, item.name, seconds: 3, item.encoding) } }
        try await offPool {
            try VideoTranscodeTests.make(media.path, "h264-opus.mp4", size: "320x240", seconds: 3, audio: true,
                                         ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "libopus"])
        }
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process((cases.map(\.name) + ["h264-opus.mp4"]).map {
                    AttachmentRequest(url: "\(server.baseURL)/media/\($0)")
                })
                for (item, d) in zip(cases, batch.attachments) {
                    #expect(d.status == .ready, "\(item.name): \(d.reason?.message ?? "")")
                    #expect(d.kind == .audio && d.transforms == [.transcoded] && d.sourceAudioCodec == item.codec && d.audioCodec == "aac",
                            "\(item.name): \(d.transforms ?? []) \(d.sourceAudioCodec ?? "-") \(d.audioCodec ?? "-")")
                    let file = try #require(d.file, "\(item.name)")
                    let read = try await AudioTranscodeTests.audio(file)
                    #expect(read["codec_name"] == "aac" && read["profile"] == "LC", "\(item.name): \(read)")
                    let duration = try #require(Double(read["duration"] ?? ""), "\(read)")
                    #expect(abs(duration - 3) <= 0.3, "\(item.name): \(duration) s")
                }
                let video = batch.attachments[cases.count]
                #expect(video.status == .ready && video.kind == .video, "\(video.reason?.message ?? "")")
                #expect(video.sourceAudioCodec == "Opus" && video.audioCodec == "aac" && video.videoCodec == "h264",
                        "\(video.sourceAudioCodec ?? "-") \(video.audioCodec ?? "-") \(video.videoCodec ?? "-")")
                let read = try await VideoTranscodeTests.streams(try #require(video.file))
                #expect(read["a.codec_name"] == "aac" && read["v.codec_name"] == "h264" && read["v.pix_fmt"] == "yuv420p", "\(read)")
            }
        }
    }

    @Test func withoutTranscodingSoundInMPEG4IOSCannotPlayIsRefusedNamingIt() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool { try AudioTranscodeTests.make(media.path, "opus.m4a", seconds: 2, ["-c:a", "libopus", "-f", "mp4"]) }
        try await withPipeline(scratch, { $0.transcode = false }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/opus.m4a", pipeline)
                #expect(d.status == .rejected && d.reason?.code == .unsupportedType, "\(d.status)")
                #expect(d.reason?.message.contains("Opus") == true && d.reason?.message.contains("libopus") == false,
                        "\(d.reason?.message ?? "")")
            }
        }
    }
}
