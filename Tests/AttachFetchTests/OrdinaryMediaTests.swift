import Foundation
import Testing
@testable import AttachFetch
@testable import AttachFetchCore

/// Ordinary files that phones and CDNs make every day, each of which was refused (TestMedia/cases,
/// made by TestMedia/make-cases.sh): every verdict checked against ffmpeg/ffprobe or vips.
@Suite struct OrdinaryMediaTests {
    static let cases = RealWorldMediaTests.casesDirectory

    /// The delivered files live in `scratch` until it goes.
    func fetch(_ names: [String], into scratch: Scratch) async throws -> [AttachmentDescriptor] {
        try await RealWorldMediaTests().fetchCases(names, into: scratch)
    }

    /// The stream types ffprobe finds in a file, in order.
    func streamTypes(_ file: String) async throws -> [String] {
        let run = try await tool("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", file])
        return run.output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// iPhone-style movies (a timed-metadata track, two frames at one instant), a movie with
    /// timecode and subtitle tracks, transport streams and a fragmented MP4 of unknown brands:
    /// each delivered as MPEG-4 with its duration, codecs and poster, holding only its audio
    /// and video, and decoded by ffmpeg without an error.
    @Test func phoneAndCDNVideosAreDeliveredAsMPEG4() async throws {
        let remuxed = ["mov-mebx-vfr.mov", "mov-tmcd-subtitles.mov", "ts-h264-aac.ts", "ts-hevc-aac.ts"]
        let names = remuxed + ["mp4-fragmented-unknown-brands.mp4"]
        let scratch = Scratch()
        defer { withExtendedLifetime(scratch) {} }
        let descriptors = try await fetch(names, into: scratch)
        for (name, d) in zip(names, descriptors) {
            #expect(d.status == .ready, "\(name): \(d.reason?.message ?? "")")
            #expect(d.mimeType == "video/mp4" && d.fileExtension == "mp4" && d.kind == .video, "\(name): \(d.mimeType ?? "-")")
            #expect(d.transforms == (remuxed.contains(name) ? [.remuxed] : []), "\(name): \(d.transforms ?? [])")
            #expect((d.duration ?? 0) > 0.5, "\(name): duration \(d.duration ?? -1)")
            #expect(d.audioCodec == "aac" && ["h264", "hevc"].contains(d.videoCodec ?? ""), "\(name)")
            #expect(d.thumbnail != nil, "\(name) has no poster")
            let file = try #require(d.file, "\(name)")
            #expect(try await streamTypes(file) == ["video", "audio"], "\(name): data and subtitle tracks are dropped")
            #expect(try await tool("/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", file, "-f", "null", "-"]).status == 0, "\(name)")
            let original = try #require(try ffprobeDisplaySize(Self.cases + "/" + name))
            #expect(d.width == original.width && d.height == original.height, "\(name)")
        }
        #expect(descriptors[2].sourceMimeType == "video/mp2t" && descriptors[3].videoCodec == "hevc")
    }

    /// MPEG-4 can hold MPEG-1 Layer II audio, but iOS does not play it: transcoded (AAC), or
    /// with transcoding off a refusal that says so and what to do.
    @Test func transportStreamWithAudioIOSCannotPlayIsTranscodedOrRefusedSayingWhy() async throws {
        let scratch = Scratch()
        defer { withExtendedLifetime(scratch) {} }
        let made = try await fetch(["ts-h264-mp2.ts"], into: scratch)[0]
        #expect(made.status == .ready && made.transforms == [.transcoded] && made.audioCodec == "aac" && made.sourceAudioCodec == "MP2",
                "\(made.reason?.message ?? "") \(made.transforms ?? [])")
        let descriptors = try await RealWorldMediaTests().fetchCases(["ts-h264-mp2.ts"], into: scratch) { $0.transcode = false }
        let reason = try #require(descriptors[0].reason)
        #expect(reason.code == .unsupportedType)
        #expect(reason.message.contains("MP2") && reason.message.contains("re-encode"), "\(reason.message)")
        #expect(descriptors[0].sourceMimeType == "video/mp2t")
    }

    /// MP3s libmagic names "data" or octet-stream: a capture starting mid-frame, two ID3 tags in
    /// a row, an unsynchronised ID3v2.3 tag that runs past its declared size. Each is
    /// delivered as it came, and ffmpeg decodes it.
    @Test func mp3sLibmagicDoesNotNameAreDelivered() async throws {
        let names = ["mp3-raw-midframe.mp3", "mp3-two-id3-tags.mp3", "mp3-id3v23-unsync.mp3"]
        let scratch = Scratch()
        defer { withExtendedLifetime(scratch) {} }
        let descriptors = try await fetch(names, into: scratch)
        for (name, d) in zip(names, descriptors) {
            #expect(d.status == .ready && d.mimeType == "audio/mpeg" && d.kind == .audio, "\(name): \(d.reason?.message ?? "")")
            #expect(d.sha256 == (try sha256sum(Self.cases + "/" + name)), "\(name): delivered as it came")
            #expect((d.duration ?? 0) > 1.5, "\(name)")
            let file = try #require(d.file)
            let decoded = try await tool("/usr/bin/ffmpeg", ["-v", "error", "-i", file, "-map", "0:a", "-f", "null", "-"])
            #expect(decoded.status == 0, "\(name): \(decoded.errors)")
        }
    }

    /// A 400-frame animation gets its thumbnail (its frames are all decoded, read in order, with
    /// nothing written to disk), and a PNG with a chunk before IHDR is delivered: vips reads both.
    @Test func longAnimationsAndOddPNGLayoutsAreDelivered() async throws {
        let names = ["gif-400-frames.gif", "png-chunk-before-ihdr.png"]
        let scratch = Scratch()
        defer { withExtendedLifetime(scratch) {} }
        let descriptors = try await fetch(names, into: scratch)
        for (name, d) in zip(names, descriptors) {
            #expect(d.status == .ready, "\(name): \(d.reason?.message ?? "")")
            #expect(d.thumbnail != nil, "\(name)")
            #expect(try await tool("/usr/bin/vips", ["copy", Self.cases + "/" + name + "[fail_on=error]", "\(scratch.path)/vips-copy.v"]).status == 0)
        }
        #expect(descriptors[0].mimeType == "image/gif" && descriptors[0].width == 472 && descriptors[0].height == 298)
        #expect(descriptors[1].mimeType == "image/png")
        // Strictness stays where it matters: a damaged last frame is still refused.
        let damaged = try await fetch(["gif-bad-last-frame.gif"], into: scratch)
        #expect(damaged[0].reason?.code == .corruptMedia, "\(damaged[0].reason?.message ?? "ready")")
    }

    /// The structure rules on their own: what each says, and what it never says.
    @Test func structureRulesNameOnlyWhatTheyShould() throws {
        func structure(_ data: Data) -> String? { data.prefix(SniffWindow.size).withUnsafeBytes { SniffWindow.structureMIME($0) } }
        func read(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }
        #expect(structure(try read(Self.cases + "/ts-h264-aac.ts")) == "video/mp2t")
        #expect(structure(try read(Self.cases + "/png-chunk-before-ihdr.png")) == "image/png")
        #expect(structure(try read(Self.cases + "/mp4-fragmented-unknown-brands.mp4")) == "video/mp4")
        // M2TS: a 4-byte timestamp before each 188-byte packet.
        let ts = try read(Self.cases + "/ts-h264-aac.ts")
        var m2ts = Data()
        for start in stride(from: 0, to: 188 * 20, by: 188) { m2ts += Data([0, 0, 0, 0]) + ts[start..<start + 188] }
        #expect(m2ts.withUnsafeBytes { SniffWindow.transportStreamPacketSize($0) } == 192)
        for noise in ["random.bin", "photo.jpg", "document.pdf", "error-page.html"] {
            #expect(structure(try read(testMediaDirectory + "/" + noise)) == nil, "\(noise)")
            let bytes = try read(testMediaDirectory + "/" + noise)
            #expect(bytes.withUnsafeBytes { MPEGAudioFrames.firstRun(in: $0, complete: true) } == nil, "\(noise)")
        }
        // Four sync bytes in a row are not a transport stream.
        #expect(structure(Data(repeating: 0x47, count: 4) + Data(count: 4_000)) == nil)
        let frames = try read(Self.cases + "/mp3-raw-midframe.mp3")
        let run = try #require(frames.withUnsafeBytes { MPEGAudioFrames.firstRun(in: $0, complete: false) })
        #expect(frames.withUnsafeBytes { MPEGAudioFrames.frameLength($0, at: run) } == 417 || frames.withUnsafeBytes {
            MPEGAudioFrames.frameLength($0, at: run) } == 418, "128 kb/s at 44.1 kHz: 417 or 418 bytes a frame")
        #expect(run > 0 && run < 418, "the run starts at the first whole frame")
    }
}
