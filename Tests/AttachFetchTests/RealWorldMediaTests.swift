import CFFmpeg
import Foundation
import Testing
@testable import AttachFetch
@testable import AttachFetchCore
@testable import AttachFetchMedia

/// The defects that other projects' published test files found (TestMedia/cases, made by
/// TestMedia/make-cases.sh): each test names the file and the verdict it must get.
@Suite struct RealWorldMediaTests {
    static let casesDirectory = testMediaDirectory + "/cases"

    /// Fetches files from TestMedia/cases in one batch; the descriptors come back in order.
    func fetchCases(_ names: [String], into scratch: Scratch, query: String = "",
                    _ adjust: (inout AttachFetchConfiguration) -> Void = { _ in }) async throws -> [AttachmentDescriptor] {
        try await withPipeline(scratch, adjust) { pipeline in
            try await withMediaServer(directory: Self.casesDirectory) { server in
                await pipeline.process(names.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)\(query)") }).attachments
            }
        }
    }

    /// H.264 at sizes whose poster conversion wrote past its buffer (heap corruption, then an
    /// abort of the whole process), and the sizes next to them: every one gets a poster of the
    /// size ffprobe reports.
    @Test func videosOfEverySizeGetAPosterWithoutCorruptingTheHeap() async throws {
        let sizes = ["1x1", "2x2", "7x5", "8x8", "10x10", "12x12", "14x14", "16x16", "24x24", "40x30", "8x320",
                     "64x64", "200x150", "312x176", "320x240"]
        let scratch = Scratch()
        let names = sizes.map { "h264-\($0).mp4" }
        let descriptors = try await fetchCases(names, into: scratch)
        for (name, d) in zip(names, descriptors) {
            #expect(d.status == .ready, "\(name): \(d.reason?.message ?? "")")
            let expected = try #require(try ffprobeDisplaySize(Self.casesDirectory + "/" + name))
            // Odd sizes cannot be 4:2:0: those files are H.264 4:4:4, which iOS cannot play
            // (docs/media.md#what-ios-plays). They are re-encoded, at the nearest even size.
            let reencoded = try RealWorldCorpusTests.notPlayableByFFprobe(Self.casesDirectory + "/" + name)
            #expect(d.transforms == (reencoded ? [.transcoded] : []), "\(name): \(d.transforms ?? [])")
            let slack = reencoded ? 1 : 0
            #expect(abs((d.width ?? 0) - expected.width) <= slack && abs((d.height ?? 0) - expected.height) <= slack,
                    "\(name): \(String(describing: d.width))x\(String(describing: d.height))")
            let thumbnail = try #require(d.thumbnail, "\(name) has no poster")
            let size = try #require(imageSize(thumbnail.file))
            #expect(size.width == thumbnail.width && size.height == thumbnail.height, "\(name)")
            // Never enlarged: a poster is at most the video's own size.
            #expect(size.width <= (d.width ?? 0) && size.height <= (d.height ?? 0), "\(name)")
        }
    }

    /// The poster converter alone, for every frame size from 1x1 to 48x48 and the odd ones
    /// that crashed: the destination has room for what libswscale writes (run this suite under
    /// AddressSanitizer too: `swift test --scratch-path .build-asan --sanitize=address`).
    @Test func posterConversionHasRoomForEveryStoreLibswscaleMakes() async throws {
        try await startLibraries()
        for name in ["h264-2x2.mp4", "h264-10x10.mp4", "h264-40x30.mp4", "h264-312x176.mp4", "h264-7x5.mp4"] {
            try frameOf(Self.casesDirectory + "/" + name) { frame in
                let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
                // Same size (the unscaled path that crashed), and scaled down and up.
                for (outWidth, outHeight) in [(width, height), (max(1, width / 2), max(1, height / 2)), (width * 3 / 2 + 1, height * 3 / 2 + 1)] {
                    let image = try MediaProber.rgbImage(frame, width: outWidth, height: outHeight)
                    #expect(image.width == outWidth && image.height == outHeight, "\(name) to \(outWidth)x\(outHeight)")
                }
            }
        }
    }

    /// PNGs of 90 bytes whose metadata chunk declares a gigabyte took the process past 1 GB
    /// each before libpng rejected them. They are refused from their chunk headers, before any
    /// decoder allocates; an honest 100 KB text chunk is still read.
    @Test func pngChunksThatDeclareAGigabyteAreRefused() async throws {
        let kinds = ["tEXt", "zTXt", "iTXt", "sPLT", "pCAL", "sCAL", "iCCP", "eXIf"]
        let scratch = Scratch()
        let descriptors = try await fetchCases(kinds.map { "png-huge-\($0).png" } + ["png-huge-IDAT.png", "png-big-text.png"], into: scratch)
        for (kind, d) in zip(kinds, descriptors) {
            #expect(d.status == .rejected && d.reason?.code == .corruptMedia, "\(kind): \(d.status) \(d.reason?.message ?? "")")
            #expect(d.reason?.message.contains("\(kind) chunk declares 1073741823 bytes") == true, "\(kind): \(d.reason?.message ?? "")")
        }
        // Image data is streamed by libpng, never allocated as declared: its own verdict stands.
        #expect(descriptors[kinds.count].reason?.code == .corruptMedia, "\(descriptors[kinds.count].reason?.message ?? "ready")")
        #expect(descriptors.last?.status == .ready, "\(descriptors.last?.reason?.message ?? "")")
    }

    /// The memory: all eight through the decode path in one child process (the replayer
    /// reports its own peak), far under one declared chunk (a reader that allocated what each declares would take 1.1 GB).
    @Test func pngChunksThatDeclareAGigabyteCostNoMemory() async throws {
        let files = ["tEXt", "zTXt", "iTXt", "sPLT", "pCAL", "sCAL", "iCCP", "eXIf"].map { Self.casesDirectory + "/png-huge-\($0).png" }
        let run = try await offPool { try runChild(builtExecutable("attach-fetch-fuzz"), files) }
        #expect(run.status == 0)
        let lines = run.output.split(separator: "\n")
        #expect(lines.filter { $0.contains(" rejected corruptMedia ") }.count == files.count, "\(run.output)")
        let peak = try #require(lines.first { $0.hasPrefix("peak-rss-kb ") }.flatMap { Int($0.split(separator: " ")[1]) })
        #expect(peak < 300 << 10, "peak \(peak >> 10) MiB")
    }

    /// The fuzz replayer's worker path (`--isolated`: decoding in a decoder worker process, as
    /// the pipeline does) gives every defect case the same verdict as its in-process path.
    @Test func fuzzReplayThroughTheWorkerPathAgreesWithInProcess() async throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.casesDirectory).sorted().map { Self.casesDirectory + "/" + $0 }
        let replayer = builtExecutable("attach-fetch-fuzz")
        let inProcess = try await offPool { try runChild(replayer, files) }
        let isolated = try await offPool { try runChild(replayer, ["--isolated"] + files) }
        #expect(inProcess.status == 0 && isolated.status == 0)
        // "ok PATH STATUS CODE message": path, status and code must agree line by line.
        func verdicts(_ output: String) -> [String] {
            output.split(separator: "\n").filter { $0.hasPrefix("ok ") }.map { $0.split(separator: " ").prefix(4).joined(separator: " ") }
        }
        #expect(verdicts(isolated.output).count == files.count)
        #expect(verdicts(isolated.output) == verdicts(inProcess.output))
    }

    /// MP3s whose first 4 KiB are an ID3v2 tag (cover art) or zero padding: the window moves
    /// past them, FFmpeg confirms, and the verdict is the same whether the server sends the
    /// file in one write or in 1 KiB writes.
    @Test func mp3BehindCoverArtOrPaddingIsTypedTheSameWhateverTheChunking() async throws {
        let names = ["mp3-id3-cover-small.mp3", "mp3-id3-cover-large.mp3", "mp3-leading-padding.mp3", "mp3-id3-then-padding.mp3"]
        let scratch = Scratch()
        let whole = try await fetchCases(names, into: scratch)
        let trickled = try await fetchCases(names, into: scratch, query: "?chunk=1024")
        for (name, pair) in zip(names, zip(whole, trickled)) {
            for d in [pair.0, pair.1] {
                #expect(d.status == .ready && d.mimeType == "audio/mpeg" && d.kind == .audio && d.audioCodec == "mp3",
                        "\(name): \(d.status) \(d.mimeType ?? "-") \(d.reason?.message ?? "")")
                #expect(d.file?.hasSuffix(".mp3") == true, "\(name)")
                #expect(d.bytes == fileSize(Self.casesDirectory + "/" + name), "\(name)")
            }
        }
    }

    /// The same for every file the tests have: the verdict, type and reason never depend on
    /// the server's write size.
    @Test func everyVerdictIsTheSameInOneWriteAndIn1KiBWrites() async throws {
        let scratch = Scratch()
        let names = try FileManager.default.contentsOfDirectory(atPath: testMediaDirectory)
            .filter { !$0.hasSuffix(".sh") && $0 != "cases" && $0 != "long.mp4" }.sorted()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let whole = await pipeline.process(names.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") }).attachments
                let trickled = await pipeline.process(names.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)?chunk=1024") }).attachments
                for (name, pair) in zip(names, zip(whole, trickled)) {
                    #expect(pair.0.status == pair.1.status && pair.0.mimeType == pair.1.mimeType && pair.0.reason?.code == pair.1.reason?.code,
                            "\(name): \(pair.0.status)/\(pair.1.status) \(pair.0.mimeType ?? "-")/\(pair.1.mimeType ?? "-")")
                }
            }
        }
    }

    /// The window itself: a fixed 4 KiB, moved only past an ID3v2 tag or padding and only
    /// when MPEG audio follows; a tag declared larger than the lookahead is refused.
    @Test func sniffWindowRules() throws {
        let sniffer = try MagicSniffer()
        let mp3 = try Data(contentsOf: URL(fileURLWithPath: Self.casesDirectory + "/mp3-id3-cover-large.mp3"))
        let decide = { (bytes: Data, complete: Bool, lookahead: Int) in
            bytes.withUnsafeBytes { SniffWindow.decide($0, complete: complete, maxLookahead: lookahead, sniffer: sniffer) }
        }
        #expect(decide(mp3.prefix(4095), false, 1 << 20) == .needMore)
        let tag = try #require(mp3.withUnsafeBytes { SniffWindow.id3v2TagSize($0) })
        #expect(tag > 100_000)
        #expect(decide(mp3.prefix(tag), false, 1 << 20) == .needMore)
        #expect(decide(mp3, true, 1 << 20) == .sniffed("audio/mpeg", skipped: tag))
        guard case .refused(.sizeLimitExceeded, _) = decide(mp3, true, 64 << 10) else {
            Issue.record("a tag over the lookahead must be refused")
            return
        }
        // An MP4 starts with zero bytes (its box size): never "padding".
        let mp4 = try Data(contentsOf: URL(fileURLWithPath: testMediaDirectory + "/clip.mp4"))
        #expect(decide(mp4, true, 1 << 20) == .sniffed("video/mp4", skipped: 0))
        // Zeros followed by a JPEG are not MP3 padding: the first window's answer stands.
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: testMediaDirectory + "/photo.jpg"))
        #expect(decide(Data(count: 100) + jpeg, true, 1 << 20) == .sniffed("application/octet-stream", skipped: 0))
    }

    /// An ISO base media file libmagic cannot name is typed from its ftyp box: the major brand,
    /// then the compatible brands, first known wins; anything that is not a whole ftyp box, or
    /// names no known brand, keeps libmagic's answer.
    @Test func isoBrandsTypeWhatLibmagicCannot() {
        func box(_ major: String, _ compatible: [String], declared: Int? = nil) -> Data {
            let size = 16 + 4 * compatible.count
            var data = Data([UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8((declared ?? size) & 0xFF)])
            data += Data("ftyp\(major)".utf8) + Data([0, 0, 2, 0]) + Data(compatible.joined().utf8)
            return data + Data(count: 64)
        }
        let cases: [(Data, String?)] = [
            (box("kddi", ["kddi", "3g2a"]), "video/3gpp2"),
            (box("3gp5", []), "video/3gpp"),
            (box("abcd", ["3ge7", "isom"]), "video/3gpp"),
            (box("qt  ", ["qt  "]), "video/quicktime"),
            (box("M4A ", ["isom"]), "audio/mp4"),
            (box("xxxx", ["isom"]), "video/mp4"),
            (box("kddi", ["kddi"]), nil),
            (box("kddi", ["3g2a"], declared: 200), nil),   // a box larger than the bytes
            (box("kddi", ["3g2a"], declared: 18), nil),    // not a whole number of brands
            (Data("RIFF\0\0\0\0WAVEfmt ".utf8) + Data(count: 64), nil),
        ]
        for (bytes, expected) in cases {
            #expect(bytes.withUnsafeBytes { SniffWindow.isoBrandMIME($0) } == expected, "\(Array(bytes.prefix(24)))")
        }
    }

    /// A photo whose scan ends after 30 KB is corruptMedia on every decoder path: with an ICC
    /// profile or an EXIF segment (libvips) as without (libjpeg-turbo's fast path), whether the
    /// file ends there or an end marker follows the cut scan ("premature end of data segment",
    /// a libjpeg warning libvips' fail_on=error let through: such files were delivered, nearly
    /// uniform grey, on every path).
    @Test func cutShortJPEGIsCorruptOnEveryPath() async throws {
        let names = ["jpeg-cut-icc.jpg", "jpeg-cut-exif.jpg", "jpeg-cut-plain.jpg",
                     "jpeg-cut-icc-eoi.jpg", "jpeg-cut-exif-eoi.jpg", "jpeg-cut-plain-eoi.jpg"]
        let scratch = Scratch()
        for (name, d) in zip(names, try await fetchCases(names, into: scratch)) {
            #expect(d.status == .rejected && d.reason?.code == .corruptMedia, "\(name): \(d.status) \(d.reason?.message ?? "")")
            if name.hasSuffix("-eoi.jpg") {
                #expect(d.reason?.message.contains("premature end of data segment") == true, "\(name): \(d.reason?.message ?? "")")
            }
        }
    }

    /// Junk bytes before a marker are a libjpeg warning that every decoder shows through:
    /// delivered, not refused (the fast path hands the warning to libvips, which decides).
    @Test func jpegWithExtraneousBytesIsDelivered() async throws {
        let scratch = Scratch()
        let d = try await fetchCases(["jpeg-extraneous-bytes.jpg"], into: scratch)[0]
        #expect(d.status == .ready && d.thumbnail != nil, "\(d.reason?.message ?? "")")
        #expect(d.width == 480 && d.height == 320)
    }

    /// Chroma subsampling TurboJPEG cannot classify (1x3, 3x2) is libvips' to decode, as
    /// libvips and ffmpeg do; it was corruptMedia from the fast path's header check.
    @Test func unusualChromaSubsamplingIsDecodedByLibvips() async throws {
        let names = ["jpeg-sampling-1x3.jpg", "jpeg-sampling-3x2.jpg"]
        let scratch = Scratch()
        for (name, d) in zip(names, try await fetchCases(names, into: scratch)) {
            #expect(d.status == .ready, "\(name): \(d.reason?.message ?? "")")
            #expect(d.width == 480 && d.height == 320, "\(name)")
            let thumbnail = try #require(d.thumbnail, "\(name)")
            #expect(imageSize(thumbnail.file).map { $0.width == 320 && $0.height == 213 } == true, "\(name)")
        }
    }

    /// Every frame of an animated GIF is decoded, within the frame and pixel budgets: one
    /// whose last frame is damaged is corruptMedia (a decode of frame 0 alone would call it ready).
    @Test func animatedGIFIsDecodedInAllFrames() async throws {
        let scratch = Scratch()
        let d = try await fetchCases(["gif-bad-last-frame.gif"], into: scratch)[0]
        #expect(d.status == .rejected && d.reason?.code == .corruptMedia, "\(d.status) \(d.reason?.message ?? "")")
        let good = try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in await fetchOne("\(server.baseURL)/media/animated.gif", pipeline) }
        }
        #expect(good.status == .ready, "\(good.reason?.message ?? "")")
    }

    /// Verdicts FFmpeg's streams decide: encrypted samples, codecs with no decoder, a program
    /// stream with only audio, and an image larger than libheif's limit.
    @Test(arguments: [
        ("mp4-cenc.mp4", ReasonCode.unsupportedType, "encrypted"),
        ("m4a-mpegh-codec.m4a", ReasonCode.unsupportedType, "no decoder for the mha1 codec"),
        ("mp4-vvc-codec.mp4", ReasonCode.unsupportedType, "no decoder for the vvc1 codec"),
        ("mpeg-ps-ac3-only.mpg", ReasonCode.unsupportedType, "only audio"),
        ("avif-17000.avif", ReasonCode.pixelLimitExceeded, "17000x17000"),
        ("avif-ispe-overflow.avif", ReasonCode.pixelLimitExceeded, "4294967295x4294967295"),
    ])
    func refusedWithTheRightReason(name: String, code: ReasonCode, words: String) async throws {
        let scratch = Scratch()
        let d = try await fetchCases([name], into: scratch)[0]
        #expect(d.status == code.status && d.reason?.code == code, "\(name): \(d.status) \(d.reason?.message ?? "")")
        #expect(d.reason?.message.contains(words) == true, "\(name): \(d.reason?.message ?? "")")
        // Nothing is left: no body, no poster, not even the batch's directory.
        #expect(scratch.tree() == [], "\(scratch.tree())")
    }

    /// HDR video (10-bit BT.2020: HLG in H.264, PQ with HDR10 metadata in HEVC) is delivered
    /// with a poster at its display size whose colours are ffmpeg's tone mapping of the same
    /// frame (zscale, tonemap: `HDRTests.toneMapping`): each channel's mean within 4 of it.
    @Test func hdrVideoGetsAPosterWithTheColoursFFmpegShows() async throws {
        let scratch = Scratch()
        // H.264 at 10 bits is not what iOS plays (docs/media.md#what-ios-plays): it is re-encoded
        // to 8 bits; HEVC Main 10 is delivered as it is.
        let h264 = try await fetchCases(["h264-hlg-10bit.mp4"], into: scratch)[0]
        #expect(h264.status == .ready && h264.transforms == [.transcoded] && h264.sourceVideoCodec == "H.264 High 10",
                "\(h264.reason?.message ?? "ready") \(h264.sourceVideoCodec ?? "-")")
        #expect(try !RealWorldCorpusTests.notPlayableByFFprobe(try #require(h264.file)))
        let names = ["hevc-hdr10.mp4"]
        for (name, d) in zip(names, try await fetchCases(names, into: scratch)) {
            #expect(d.status == .ready && d.kind == .video && d.width == 160 && d.height == 120, "\(name): \(d.reason?.message ?? "")")
            let poster = try #require(d.thumbnail?.file, "\(name)")
            func means(_ input: String, _ output: String, filter: String = "scale=160:120") async throws -> [Double] {
                let converted = try await tool("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", input, "-frames:v", "1", "-vf", filter,
                                                             "-f", "rawvideo", "-pix_fmt", "rgb24", output])
                #expect(converted.status == 0, "\(converted.errors)")
                let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
                return (0..<3).map { channel in
                    Double(stride(from: channel, to: bytes.count, by: 3).reduce(0) { $0 + Int(bytes[$1]) }) / Double(max(1, bytes.count / 3))
                }
            }
            let reference = try await means(Self.casesDirectory + "/" + name, scratch.path + "/reference.rgb", filter: HDRTests.toneMapping("160:120"))
            let ours = try await means(poster, scratch.path + "/poster.rgb")
            #expect(zip(reference, ours).allSatisfy { abs($0 - $1) < 4 }, "\(name): ffmpeg \(reference), poster \(ours)")
            unlink(scratch.path + "/reference.rgb")
            unlink(scratch.path + "/poster.rgb")
        }
    }

    /// QuickTime (what iPhones record) and 3GPP/3GPP2 (also under a brand libmagic does not
    /// know, typed from the ftyp box's compatible brands) with codecs MPEG-4 carries are moved
    /// into MPEG-4 without re-encoding: delivered as `.mp4`, `transforms: ["remuxed"]`, the
    /// source facts kept, the file decodable by ffmpeg at the same size. ProRes is transcoded.
    @Test func quickTimeAnd3GPPAreRemuxedIntoMPEG4() async throws {
        let names = ["mov-h264-aac.mov", "video.3gp", "video.3g2", "video-kddi.3g2", "mov-prores.mov"]
        let scratch = Scratch()
        let descriptors = try await fetchCases(names, into: scratch)
        for (name, d) in zip(names.prefix(4), descriptors) {
            #expect(d.status == .ready, "\(name): \(d.reason?.message ?? "")")
            #expect(d.mimeType == "video/mp4" && d.fileExtension == "mp4" && d.kind == .video, "\(name): \(d.mimeType ?? "-")")
            #expect(d.transforms == [.remuxed], "\(name)")
            #expect(d.sourceMimeType == MediaType.convertibleForSniffedMIME(d.sourceMimeType ?? "")?.mimeType && d.sourceMimeType != "video/mp4", "\(name)")
            #expect(d.sourceBytes == fileSize(Self.casesDirectory + "/" + name))
            let file = try #require(d.file)
            let digest = try sha256sum(file)
            #expect(file.hasSuffix(".mp4") && d.bytes == fileSize(file) && d.sha256 == digest, "\(name)")
            let original = try #require(try ffprobeDisplaySize(Self.casesDirectory + "/" + name))
            let delivered = try #require(try ffprobeDisplaySize(file))
            #expect(delivered.width == original.width && delivered.height == original.height && d.width == original.width, "\(name)")
            let decoded = try await tool("/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", file, "-f", "null", "-"])
            #expect(decoded.status == 0, "\(name)")
            #expect(d.thumbnail != nil, "\(name)")
        }
        #expect(descriptors[0].audioCodec == "aac" && descriptors[0].videoCodec == "h264")
        // Typed from its compatible brand (libmagic does not know "kddi").
        #expect(descriptors[3].sourceMimeType == "video/3gpp2")
        // ProRes is not what MPEG-4 carries for iOS: transcoded to H.264 High 8-bit 4:2:0.
        let prores = descriptors[4]
        #expect(prores.status == .ready && prores.transforms == [.transcoded] && prores.videoCodec == "h264"
                && prores.sourceVideoCodec == "ProRes", "\(prores.reason?.message ?? "ready") \(prores.transforms ?? [])")
        #expect(try !RealWorldCorpusTests.notPlayableByFFprobe(try #require(prores.file)))
        // With transcoding off it is refused, naming the codec.
        let refused = try await fetchCases(["mov-prores.mov"], into: scratch) { $0.transcode = false }[0]
        #expect(refused.reason?.code == .unsupportedType && refused.reason?.message.contains("ProRes") == true,
                "\(refused.reason?.message ?? "ready")")
        // Strict accept-or-reject: refused as today.
        let strict = try await fetchCases(["mov-h264-aac.mov"], into: scratch) { $0.normalize = false }
        #expect(strict[0].reason?.code == .unsupportedType, "\(strict[0].reason?.message ?? "ready")")
    }

    /// Damaged files decoded side by side: each reason is its own decoder's (one job per worker
    /// at a time, so libvips' process-wide error buffer holds one attachment's text), and no
    /// message names a working file or directory.
    @Test func reasonsAreEachAttachmentsOwnAndNameNoWorkingPath() async throws {
        let cases: [(String, String)] = [("jpeg-cut-icc.jpg", "Premature end"), ("gif-bad-last-frame.gif", "frame"),
                                         ("png-huge-tEXt.png", "tEXt"), ("jpeg-cut-plain.jpg", "Premature end"),
                                         ("png-huge-IDAT.png", "png"), ("mp4-vvc-codec.mp4", "vvc1")]
        let scratch = Scratch()
        for _ in 0..<3 {
            let descriptors = try await fetchCases(cases.map(\.0) + cases.map(\.0), into: scratch)
            for (expected, d) in zip(cases + cases, descriptors) {
                let message = d.reason?.message ?? "ready"
                #expect(message.contains(expected.1), "\(expected.0): \(message)")
                #expect(!message.contains(scratch.path) && !message.contains(".part-") && !message.contains("/tmp"), "\(expected.0): \(message)")
                // Nothing of another attachment's decoder.
                for other in cases where other.1 != expected.1 && !["png", "frame"].contains(other.1) {
                    #expect(!message.contains(other.1), "\(expected.0): \(message)")
                }
            }
        }
    }

    /// Box sizes an attacker wrote never overflow the arithmetic that reads them (the fuzzer
    /// found a trap in the ispe area): read in this process, where a trap would end the tests.
    @Test func heifBoxSizesNeverOverflow() throws {
        let overflow = try #require(HEIFImageSize.largest(Self.casesDirectory + "/avif-ispe-overflow.avif"))
        #expect(overflow.width == 0xFFFF_FFFF && HEIFImageSize.area(overflow.width, overflow.height) == Int.max)
        #expect(HEIFImageSize.largest(Self.casesDirectory + "/avif-largesize.avif") == nil)
        let limits = ThumbnailLimits(AttachFetchConfiguration())
        #expect(throws: Reason.self) {
            try Thumbnailer.checkBudgets(width: Int.max / 2, height: 3, interlaced: false, frames: Int.max / 4, limits: limits)
        }
    }

    /// The container's pasp box (1:1) wins over the bitstream's 27:64, as FFmpeg's
    /// av_guess_sample_aspect_ratio and players decide: 320x240, not 135x240.
    @Test func displaySizeFollowsTheContainersAspectRatio() async throws {
        let scratch = Scratch()
        let d = try await fetchCases(["mp4-pasp-square.mp4"], into: scratch)[0]
        #expect(d.status == .ready, "\(d.reason?.message ?? "")")
        let expected = try #require(try ffprobeDisplaySize(Self.casesDirectory + "/mp4-pasp-square.mp4"))
        #expect(expected.width == 320 && expected.height == 240)
        #expect(d.width == 320 && d.height == 240, "\(String(describing: d.width))x\(String(describing: d.height))")
        #expect(d.thumbnail.map { $0.width == 320 && $0.height == 240 } == true)
    }
}
