import Foundation
import Testing
@testable import AttachFetch

/// A source its own decoder reports errors in, re-encoded from what could be decoded: the
/// descriptor says so (`partial`, `sourceDamage` in the decoder's words), and ffmpeg agrees the
/// source is damaged. A clean source of the same kind is never called partial.
@Suite struct DamagedSourceTests {
    /// A 10-s FLAC, and the same with 64 bytes flipped at 40 % and 60 % of the file.
    static func make(_ directory: String) throws {
        let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=10",
                                                "-c:a", "flac", "\(directory)/clean.flac"])
        try #require(made.status == 0, "\(made.errors)")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(directory)/clean.flac")))
        for share in [0.4, 0.6] {
            let at = Int(Double(bytes.count) * share)
            for i in at..<(at + 64) { bytes[i] ^= 0x5A }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: "\(directory)/damaged.flac"))
    }

    /// Lines ffmpeg writes at its error level decoding `file` whole.
    static func ffmpegErrors(_ file: String) throws -> [String] {
        let run = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-i", file, "-f", "null", "-"])
        return run.errors.split(separator: "\n").map(String.init)
    }

    @Test func aDamagedSourceIsDeliveredAsPartialWithTheDecodersWords() async throws {
        let media = Scratch()
        try await offPool { try Self.make(media.path) }
        #expect(try Self.ffmpegErrors("\(media.path)/clean.flac").isEmpty)
        #expect(try !Self.ffmpegErrors("\(media.path)/damaged.flac").isEmpty, "ffmpeg finds the damage too")
        try await withPipeline(Scratch()) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(["clean.flac", "damaged.flac"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") })
                let (clean, damaged) = (batch.attachments[0], batch.attachments[1])
                #expect(clean.status == .ready && clean.transforms == [.transcoded] && clean.sourceDamage == nil,
                        "\(clean.transforms ?? []) \(clean.sourceDamage ?? "")")
                #expect(damaged.status == .ready && damaged.transforms == [.transcoded, .partial],
                        "\(damaged.status) \(damaged.transforms ?? []) \(damaged.reason?.message ?? "")")
                let damage = try #require(damaged.sourceDamage)
                #expect(damage.contains("FLAC audio") && damage.contains("did not decode") && damage.contains("Invalid data"), "\(damage)")
                // What was delivered is whole and decodes cleanly: the damage is in the source only.
                let file = try #require(damaged.file)
                #expect(try Self.ffmpegErrors(file).isEmpty)
                #expect(abs((damaged.duration ?? 0) - 10) < 0.5, "\(damaged.duration ?? 0) s of 10")
            }
        }
    }

    /// Samples encrypted with Common Encryption whose file names no key system (no `pssh`, as
    /// ffmpeg writes them): what the transcoder takes without a poster search (VP9 in MPEG-4,
    /// H.264 4:4:4) is refused as encrypted, never decoded as damage.
    @Test func anEncryptedSourceForTheTranscoderIsRefusedAsEncrypted() async throws {
        let media = Scratch()
        try await offPool {
            for (name, codec) in [("vp9-cenc.mp4", ["-c:v", "libvpx-vp9", "-deadline", "realtime"]),
                                  ("h264-444-cenc.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv444p"])] {
                let key = "00112233445566778899aabbccddeeff"
                let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "2"]
                                    + codec + ["-encryption_scheme", "cenc-aes-ctr", "-encryption_key", key, "-encryption_kid", key, "\(media.path)/\(name)"])
                try #require(made.status == 0, "\(made.errors)")
            }
        }
        try await withPipeline(Scratch()) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(["vp9-cenc.mp4", "h264-444-cenc.mp4"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") })
                for d in batch.attachments {
                    #expect(d.status == ReasonCode.unsupportedType.status && d.reason?.code == .unsupportedType && d.reason?.message.contains("encrypted") == true,
                            "\(d.url): \(d.status) \(d.reason?.code.rawValue ?? "") \(d.reason?.message ?? "")")
                }
            }
        }
    }

    /// A header may state any sample rate: a 104-byte Monkey's Audio file stating 380 MHz
    /// (TestMedia/cases, found by scripts/fuzz.sh) is refused as corrupt before libswresample
    /// builds a filter for it, which took seconds and a gigabyte; in process and in a worker.
    @Test func anImpossibleSampleRateIsRefusedBeforeTheResamplerIsBuilt() async throws {
        let file = testMediaDirectory + "/cases/ape-rate-380mhz.ape"
        let replayer = builtExecutable("attach-fetch-fuzz")
        for arguments in [[file], ["--isolated", file]] {
            let run = try await offPool { try runChild(replayer, arguments) }
            let lines = run.output.split(separator: "\n")
            let verdict = try #require(lines.first { $0.hasPrefix("ok ") }, "\(run.output)")
            #expect(verdict.contains(" rejected corruptMedia ") && verdict.contains("380077556 samples a second"), "\(verdict)")
            let peak = try #require(lines.first { $0.hasPrefix("peak-rss-kb ") }.flatMap { Int($0.split(separator: " ")[1]) })
            #expect(peak < 300 << 10, "\(arguments): peak \(peak >> 10) MiB")
        }
    }
}
