import Foundation
import Testing
import CTestSupport
@testable import AttachFetch
@testable import AttachFetchMedia

/// Every image attach-fetch writes shows the source's colours (docs/media.md, "Colour"): the
/// iOS attachment keeps the source's ICC profile with the source's values, thumbnails and the
/// Android variant are converted to sRGB. The check renders each output to sRGB through its own
/// profile (sRGB when it has none) and the source the same way, with `vips icc_transform` and
/// the relative colorimetric intent, scaled to the output's size, and compares the two.
@Suite struct ColourTests {
    /// The ceiling of the 99th-percentile difference that the sRGB twins measure, per output, on
    /// these gradients (each source at quality 95): thumbnail 11-13/255 (320 px at quality 80),
    /// the converted attachment and the Android variant 4-7/255 (quality 85), with libvips 8.14
    /// on two x86-64 machines whose SIMD paths differ by 1/255. A wide-colour or CMYK source may
    /// differ by its twin's figure plus 2/255 at the 99th percentile, and in the mean by 2/255 or
    /// its twin's mean plus 1/255, whichever is more. A dropped or ignored profile is 9-33/255 off
    /// in the mean on these gradients: the bounds tell it from coding error by several times.
    static let calibratedP99: [String: Double] = ["thumbnail": 14, "attachment": 7, "android": 7]

    /// A decision for ProPhoto RGB, whose gamut is about 2.5 times as wide as sRGB's on these
    /// saturated colours: in an 8-bit JPEG its steps there are that much coarser, and the
    /// coding error at the 99th percentile grows with them, in its twin (the source rendered to
    /// sRGB keeps the steps) and more in outputs converted from it. ProPhoto's outputs and its
    /// twin may be 2/255 past the 99th-percentile bounds; the means are held as every source's
    /// are. Measured: thumbnail 10 (twin 7), Android variant 9 (twin 9), means 0.98-1.21/255.
    static let wideSteps: Double = 2

    struct Difference: CustomStringConvertible {
        var meanPerBand: [Double]
        var p99: Double
        var description: String { "mean per band \(meanPerBand.map { ($0 * 100).rounded() / 100 }), p99 \(p99)" }
    }

    static func vips(_ arguments: [String], program: String = "/usr/bin/vips") throws -> String {
        let run = try tool(program, arguments)
        guard run.status == 0 else { throw PictureCropTests.ToolFailed(description: "vips \(arguments.joined(separator: " ")): \(run.errors)") }
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `file` as a phone that manages colour shows it: rendered to 8-bit `space` (sRGB, or the
    /// output's own Display P3) through its embedded profile, through `fallback` (sRGB or CMYK)
    /// when it has none.
    static func rendered(_ file: String, into work: String, name: String, fallback: String = "srgb", space: String = "srgb") throws -> String {
        let out = "\(work)/\(name)-\(space).v"
        _ = try vips(["icc_transform", file, out, space, "--embedded", "--intent", "relative", "--input-profile", fallback])
        return out
    }

    /// The difference between an output and the source scaled to the output's size as the
    /// pipeline scales it (`vips thumbnail`, its profile kept), then rendered. An output that
    /// keeps Display P3 is compared in Display P3: rendered to sRGB, its 8-bit P3 steps and
    /// JPEG error on saturated colours grow by up to twice, which says nothing of its colours.
    static func difference(output: String, source: String, sourceFallback: String = "srgb", space: String, work: String, name: String) throws -> Difference {
        let shown = try rendered(output, into: work, name: "\(name)-out", space: space)
        let width = try vips(["-f", "width", shown], program: "/usr/bin/vipsheader")
        let height = try vips(["-f", "height", shown], program: "/usr/bin/vipsheader")
        let scaledSource = "\(work)/\(name)-src.v"
        _ = try vips(["thumbnail", source, scaledSource, width, "--height", height, "--size", "force"])
        let scaled = try rendered(scaledSource, into: work, name: "\(name)-ref", fallback: sourceFallback, space: space)
        _ = try vips(["subtract", shown, scaled, "\(work)/\(name)-d.v"])
        _ = try vips(["abs", "\(work)/\(name)-d.v", "\(work)/\(name)-a.v"])
        _ = try vips(["cast", "\(work)/\(name)-a.v", "\(work)/\(name)-a8.v", "uchar"])
        let means = try (0..<3).map { band -> Double in
            _ = try vips(["extract_band", "\(work)/\(name)-a8.v", "\(work)/\(name)-b\(band).v", "\(band)"])
            return try #require(Double(try vips(["avg", "\(work)/\(name)-b\(band).v"])))
        }
        let p99 = try #require(Double(try vips(["percent", "\(work)/\(name)-a8.v", "99"])))
        return Difference(meanPerBand: means, p99: p99)
    }

    /// 1024x512 of smooth gradients between saturated colours (`ffmpeg`'s `gradients`), as sRGB
    /// PNG: where sRGB and Display P3 differ most, with no edge for scaling to blur.
    static func pattern(_ path: String) throws {
        let run = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                                               "gradients=s=1024x512:c0=red:c1=lime:c2=blue:c3=magenta:c4=yellow:n=5:speed=0.00001",
                                               "-frames:v", "1", "-pix_fmt", "rgb24", path])
        guard run.status == 0 else { throw PictureCropTests.ToolFailed(description: "ffmpeg: \(run.errors)") }
    }

    /// Whether a file carries an ICC profile.
    static func hasProfile(_ file: String) throws -> Bool {
        try vips(["-a", file], program: "/usr/bin/vipsheader").contains("icc-profile-data")
    }

    /// Display P3 (an iPhone's photos) as HEIC, JPEG, PNG and WebP, Adobe RGB (a camera's
    /// setting), ProPhoto RGB (a photo editor's export), greyscale with a profile, and CMYK with its profile:
    /// the attachment, the thumbnail and the Android variant each show the source's colours.
    /// Each has an sRGB twin (the source rendered to sRGB, saved the same way) processed beside
    /// it: the twin's figure on the same output is the calibration.
    ///
    /// A decision (docs/media.md, "Colour"): the thumbnail and the Android variant of a
    /// converted source (HEIC, WebP) are made from the attachment, a Display P3 JPEG at quality
    /// 85, whose 8-bit steps and JPEG error on saturated colours grow on the way to sRGB. Those
    /// two may differ by their twin's figure plus 8/255 at the 99th percentile and in the mean by
    /// 2.5/255 or the twin's mean plus 1.5/255 (measured: 3-7/255 past the twin, and a mean of
    /// 2.27/255 in red for the WebP's thumbnail, a third generation of lossy coding), instead of
    /// 2/255 and 2/255.
    @Test func everyOutputShowsTheSourcesColours() async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        let sources: [(name: String, profile: String, fallback: String)] = [
            ("p3.heic", "p3", "srgb"), ("p3.jpg", "p3", "srgb"), ("p3.png", "p3", "srgb"), ("p3.webp", "p3", "srgb"),
            ("cmyk.jpg", "cmyk", "cmyk"),
            ("adobe-rgb.jpg", "/usr/share/color/icc/compatibleWithAdobeRGB1998.icc", "srgb"),
            ("prophoto.jpg", "\(work.path)/prophoto.icc", "srgb"),
            ("grey.jpg", "/usr/share/color/icc/Gray.icc", "srgb"),
        ]
        let names = sources.flatMap { [$0.name, "twin-\($0.name)"] }
        try await offPool {
            try Self.pattern("\(work.path)/pattern.png")
            // ProPhoto RGB (ROMM, as Lightroom exports): D50, its primaries, gamma 1.8.
            try #require(af_test_write_rgb_profile("\(work.path)/prophoto.icc", 0.3457, 0.3585,
                                                   [0.7347, 0.2653, 0.1596, 0.8404, 0.0366, 0.0001], 1.8) == 0)
            for source in sources {
                let quality = source.name.hasSuffix(".png") ? "" : "[Q=95]"
                _ = try Self.vips(["icc_transform", "\(work.path)/pattern.png", "\(media.path)/\(source.name)\(quality)", source.profile,
                                   "--input-profile", "srgb", "--intent", "relative"])
                _ = try Self.vips(["icc_transform", "\(media.path)/\(source.name)", "\(media.path)/twin-\(source.name)\(quality)", "srgb",
                                   "--embedded", "--input-profile", source.fallback, "--intent", "relative"])
            }
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let batch = await pipeline.process(names.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") },
                                                   deadline: .seconds(30))
                var measured: [String: Difference] = [:], secondGeneration: Set<String> = []
                for (name, d) in zip(names, batch.attachments) {
                    #expect(d.status == .ready, "\(name): \(d.reason?.message ?? "")")
                    let source = try #require(sources.first { name.hasSuffix($0.name) })
                    let isTwin = name.hasPrefix("twin-")
                    var outputs: [(String, String)] = []
                    let converted = d.transforms?.isEmpty == false
                    if let thumbnail = d.thumbnail?.file { outputs.append(("thumbnail", thumbnail)) }
                    if converted, let file = d.file { outputs.append(("attachment", file)) }
                    if let variant = d.variants?["android"]?.file { outputs.append(("android", variant)) }
                    #expect(outputs.contains { $0.0 == "thumbnail" }, "\(name): no thumbnail")
                    // A profile, which Android ignores, or a format it does not show: a variant.
                    #expect(outputs.contains { $0.0 == "android" } || isTwin, "\(name): \(outputs.map(\.0))")
                    for (kind, file) in outputs {
                        // Thumbnails and variants are sRGB, without a profile; the attachment keeps
                        // the source's (P3, or the twin's sRGB).
                        let keepsP3 = kind == "attachment" && source.profile == "p3" && !isTwin
                        #expect(try Self.hasProfile(file) == (kind == "attachment"), "\(name) \(kind)")
                        if converted && kind != "attachment" { secondGeneration.insert("\(name) \(kind)") }
                        measured["\(name) \(kind)"] = try await offPool {
                            try Self.difference(output: file, source: "\(media.path)/\(name)", sourceFallback: isTwin ? "srgb" : source.fallback,
                                                space: keepsP3 ? "p3" : "srgb", work: work.path, name: "\(name)-\(kind)")
                        }
                    }
                }
                for (key, difference) in measured.sorted(by: { $0.key < $1.key }) { print("colour: \(key): \(difference)") }
                for (key, difference) in measured where !key.hasPrefix("twin-") {
                    let kind = String(key.split(separator: " ").last!)
                    let twin = try #require(measured["twin-\(key)"], "\(key): the twin has no \(kind)")
                    // 8-bit ProPhoto's steps on saturated colours (`wideSteps`).
                    let wide = key.hasPrefix("prophoto") ? Self.wideSteps : 0
                    #expect(twin.p99 <= (Self.calibratedP99[kind] ?? 0) + wide, "twin-\(key): \(twin), past the calibrated ceiling")
                    let (meanFloor, meanPastTwin, p99Bound) = secondGeneration.contains(key)
                        ? (2.5, 1.5, twin.p99 + 8) : (2, 1, twin.p99 + 2 + wide)
                    let meanBounds = twin.meanPerBand.map { max(meanFloor, $0 + meanPastTwin) }
                    #expect(zip(difference.meanPerBand, meanBounds).allSatisfy { $0 <= $1 }, "\(key): \(difference), its sRGB twin \(twin)")
                    #expect(difference.p99 <= p99Bound, "\(key): \(difference), its sRGB twin \(twin)")
                }
            }
        }
    }

    /// The iOS attachment made from a Display P3 HEIC keeps wide colour: its ICC profile is
    /// the source's, and nothing else of the source's metadata is written.
    @Test func aConvertedAttachmentKeepsTheSourcesProfile() async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        try await offPool {
            try Self.pattern("\(work.path)/pattern.png")
            _ = try Self.vips(["icc_transform", "\(work.path)/pattern.png", "\(media.path)/p3.heic[Q=95]", "p3", "--input-profile", "srgb"])
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/p3.heic", pipeline)
                #expect(d.status == .ready && d.mimeType == "image/jpeg", "\(d.reason?.message ?? "")")
                let file = try #require(d.file)
                let fields = try Self.vips(["-a", file], program: "/usr/bin/vipsheader")
                #expect(fields.contains("icc-profile-data"), "the attachment has no profile: \(fields)")
                let made = try Self.vips(["-f", "icc-profile-data", file], program: "/usr/bin/vipsheader")
                let source = try Self.vips(["-f", "icc-profile-data", "\(media.path)/p3.heic"], program: "/usr/bin/vipsheader")
                #expect(made == source, "the attachment's profile is not the source's")
                #expect(!fields.contains("xmp-data") && !fields.contains("gps"), "\(fields)")
            }
        }
    }

    /// A video's poster is converted with the stream's matrix and range: an HD clip tagged
    /// BT.709 (limited range), of saturated gradients, against `ffmpeg`'s own conversion of the
    /// same frame with the same tags (BT.601 on the same frame is about 6.6/255 off).
    @Test func aPostersColoursFollowTheStreamsMatrix() async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        try await offPool {
            let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                                                    "gradients=s=1280x720:c0=red:c1=lime:c2=blue:c3=magenta:c4=yellow:n=5:speed=0.00001:rate=25",
                                                    "-t", "1", "-vf", "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p",
                                                    "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709",
                                                    "-c:v", "libx264", "-preset", "ultrafast", "\(media.path)/hd.mp4"])
            try #require(made.status == 0, "\(made.errors)")
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/hd.mp4", pipeline, thumbnailTime: 0)
                let poster = try #require(d.thumbnail, "\(d.reason?.message ?? "")")
                let size = "\(poster.width):\(poster.height)"
                for (matrix, bound) in [("bt709", 2.5), ("bt601", -1)] {
                    let reference = "\(work.path)/\(matrix).png"
                    let run = try await tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-i", "\(media.path)/hd.mp4", "-frames:v", "1",
                                                                 "-vf", "scale=\(size):in_color_matrix=\(matrix):in_range=tv:flags=area,format=rgb24", reference])
                    try #require(run.status == 0, "\(run.errors)")
                    _ = try Self.vips(["subtract", poster.file, reference, "\(work.path)/\(matrix)-d.v"])
                    _ = try Self.vips(["abs", "\(work.path)/\(matrix)-d.v", "\(work.path)/\(matrix)-a.v"])
                    let off = try #require(Double(try Self.vips(["avg", "\(work.path)/\(matrix)-a.v"])))
                    print("poster against ffmpeg's \(matrix) conversion: \(off)")
                    if bound > 0 { #expect(off < bound, "the poster is \(off) off the frame converted as \(matrix)") }
                    else { #expect(off > 4, "the poster is as close to BT.601's conversion (\(off)): the check cannot tell them apart") }
                }
            }
        }
    }

    /// An AVIF that states Display P3 as code points (an `nclx` colour property, as AVIF
    /// encoders write it) and carries no ICC profile: the attachment carries libvips' Display P3
    /// profile with the source's values, and the thumbnail and the Android variant are converted
    /// through it (each compared with the source rendered through that profile).
    @Test func anAVIFStatingDisplayP3InCodePointsShowsItsColours() async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        let source = "\(media.path)/nclx.avif"
        try await offPool {
            try Self.pattern("\(work.path)/pattern.png")
            _ = try Self.vips(["icc_transform", "\(work.path)/pattern.png", "\(work.path)/p3.png", "p3", "--input-profile", "srgb", "--intent", "relative"])
            // P3's numbers without a profile: AV1 4:4:4, full range, BT.709's matrix, tagged P3 primaries and sRGB's transfer.
            let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-i", "\(work.path)/p3.png", "-frames:v", "1",
                                                    "-vf", "scale=out_color_matrix=bt709:out_range=full,format=yuv444p",
                                                    "-color_primaries", "smpte432", "-color_trc", "iec61966-2-1", "-colorspace", "bt709",
                                                    "-color_range", "pc", "-c:v", "libaom-av1", "-cpu-used", "8", "-crf", "8", "-still-picture", "1", source])
            try #require(made.status == 0, "\(made.errors)")
        }
        #expect(try !Self.hasProfile(source), "the source must state its colour without a profile")
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/nclx.avif", pipeline)
                let file = try #require(d.file, "\(d.reason?.message ?? "")")
                #expect(try Self.hasProfile(file), "the attachment carries no profile")
                let outputs = [("attachment", file, "p3"), ("thumbnail", try #require(d.thumbnail?.file), "srgb"),
                               ("android", try #require(d.variants?["android"]?.file), "srgb")]
                for (what, output, space) in outputs {
                    let off = try Self.difference(output: output, source: source, sourceFallback: "p3", space: space, work: work.path, name: what)
                    print("nclx AVIF \(what): \(off)")
                    #expect(off.meanPerBand.allSatisfy { $0 < 3 }, "\(what): \(off)")
                }
            }
        }
    }

    /// An AVIF that states BT.2020 primaries with BT.709's transfer as code points (no ICC
    /// profile), as wide-gamut SDR encoders write it: the thumbnail and the Android variant are
    /// converted through the profile LittleCMS makes for BT.2020 (`RGBProfile`), and each is
    /// compared with the source as FFmpeg's `zscale` (zimg, not LittleCMS) renders it to sRGB.
    @Test func anAVIFStatingBT2020InCodePointsShowsItsColours() async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        let source = "\(media.path)/bt2020.avif", reference = "\(work.path)/reference.png"
        try await offPool {
            try Self.pattern("\(work.path)/pattern.png")
            func ffmpeg(_ arguments: [String]) throws {
                let run = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y"] + arguments)
                try #require(run.status == 0, "\(run.errors)")
            }
            // The pattern's colours in BT.2020's primaries, then AV1 4:4:4 at full range, BT.709's
            // matrix, tagged BT.2020 primaries and BT.709's transfer.
            try ffmpeg(["-i", "\(work.path)/pattern.png", "-frames:v", "1",
                        "-vf", "zscale=pin=709:tin=iec61966-2-1:p=2020:t=709,format=rgb24,scale=out_color_matrix=bt709:out_range=full,format=yuv444p",
                        "-color_primaries", "bt2020", "-color_trc", "bt709", "-colorspace", "bt709", "-color_range", "pc",
                        "-c:v", "libaom-av1", "-cpu-used", "8", "-crf", "8", "-still-picture", "1", source])
            // The independent rendering: decoded by FFmpeg, turned to sRGB by zimg.
            try ffmpeg(["-i", source, "-frames:v", "1",
                        "-vf", "scale=in_color_matrix=bt709:in_range=full,format=gbrpf32le,zscale=pin=2020:tin=709:p=709:t=iec61966-2-1,format=rgb24",
                        reference])
        }
        #expect(try !Self.hasProfile(source), "the source must state its colour without a profile")
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/bt2020.avif", pipeline)
                let file = try #require(d.file, "\(d.reason?.message ?? "")")
                #expect(try Self.hasProfile(file), "the attachment carries no profile")
                let outputs = [("attachment", file), ("thumbnail", try #require(d.thumbnail?.file)),
                               ("android", try #require(d.variants?["android"]?.file))]
                for (what, output) in outputs {
                    let off = try Self.difference(output: output, source: reference, space: "srgb", work: work.path, name: what)
                    print("BT.2020 AVIF \(what): \(off)")
                    #expect(off.meanPerBand.allSatisfy { $0 < 3 }, "\(what): \(off)")
                }
            }
        }
    }

    /// A PNG that states Display P3 in a `cICP` chunk (primaries 12, sRGB's transfer, RGB,
    /// full range) and carries no ICC profile: the thumbnail and the Android variant (made for
    /// it, as for a profiled image Android would show without its colours) are converted
    /// through libvips' Display P3 profile; the attachment is the PNG as it came.
    @Test func aPNGStatingDisplayP3InACICPChunkShowsItsColours() async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        let source = "\(media.path)/cicp.png"
        try await offPool {
            try Self.pattern("\(work.path)/pattern.png")
            _ = try Self.vips(["icc_transform", "\(work.path)/pattern.png", "\(work.path)/p3.png", "p3", "--input-profile", "srgb", "--intent", "relative"])
            _ = try Self.vips(["copy", "\(work.path)/p3.png", "\(work.path)/bare.png[strip]"])
            let bare = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(work.path)/bare.png")))
            // After the signature (8 bytes) and IHDR (12 + 13).
            try Data(bare[..<33] + Self.pngChunk("cICP", [12, 13, 0, 1]) + bare[33...]).write(to: URL(fileURLWithPath: source))
        }
        #expect(try !Self.hasProfile(source), "the source must state its colour without a profile")
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/cicp.png", pipeline)
                let file = try #require(d.file, "\(d.reason?.message ?? "")")
                #expect(FileManager.default.contentsEqual(atPath: file, andPath: source), "the attachment is not the PNG as it came")
                let outputs = [("thumbnail", try #require(d.thumbnail?.file)), ("android", try #require(d.variants?["android"]?.file, "no Android variant"))]
                for (what, output) in outputs {
                    let off = try Self.difference(output: output, source: source, sourceFallback: "p3", space: "srgb", work: work.path, name: what)
                    print("cICP PNG \(what): \(off)")
                    #expect(off.meanPerBand.allSatisfy { $0 < 3 }, "\(what): \(off)")
                }
            }
        }
    }

    /// What a `cICP` chunk is read as: Display P3 with an SDR transfer is libvips' `p3`, BT.2020
    /// with one a profile made for it; PQ, a matrix other than RGB's, narrow range, or a chunk
    /// after the image data (where PNG forbids it) are not a statement this follows.
    @Test(arguments: [([12, 13, 0, 1], false, "p3"), ([12, 1, 0, 1], false, "p3"), ([9, 1, 0, 1], false, "made"), ([9, 16, 0, 1], false, nil),
                      ([12, 16, 0, 1], false, nil), ([12, 13, 1, 1], false, nil), ([12, 13, 0, 0], false, nil),
                      ([12, 13, 0, 1], true, nil)] as [([UInt8], Bool, String?)])
    func aCICPChunkIsReadAsStated(chunk: [UInt8], afterImageData: Bool, profile: String?) throws {
        let work = Scratch(), path = "\(work.path)/stated.png"
        let header = Self.pngChunk("IHDR", [0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]), data = Self.pngChunk("IDAT", [0])
        let cicp = Self.pngChunk("cICP", chunk), text = Self.pngChunk("tEXt", Array("Comment\u{0}made here".utf8))
        let body = afterImageData ? data + cicp : cicp + data
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + header + text + body + Self.pngChunk("IEND", [])).write(to: URL(fileURLWithPath: path))
        let read = StatedColour.statement(path).flatMap(StatedColour.profile).map { if case .builtIn(let name) = $0 { name } else { "made" } }
        #expect(read == profile, "\(chunk) after the image data: \(afterImageData)")
    }

    /// A PNG chunk: length, type, data and the CRC-32 (ISO 3309, reflected 0xEDB88320) of type and data.
    static func pngChunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let covered = Array(type.utf8) + data
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in covered {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        crc ^= 0xFFFF_FFFF
        let be = { (value: UInt32) in [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> UInt32($0)) } }
        return be(UInt32(data.count)) + covered + be(crc)
    }
}

