import Foundation
import Testing
@testable import AttachFetch

/// What Android reads is upright without EXIF: Firebase's Android SDK decodes the notification
/// image with `BitmapFactory`, which ignores the orientation tag. A photo stored turned (EXIF
/// 2-8), even a small 16:9 JPEG Android would otherwise take as it is, gets an Android variant
/// whose pixels are turned and which has no tag; the descriptor, the thumbnail and the variant
/// follow one reading of the orientation. Checked against `vips autorot` of the source.
@Suite struct OrientationTests {
    /// The mean absolute difference between `file` decoded without EXIF (as `BitmapFactory`
    /// decodes it) and `reference`, scaled to `file`'s size (and cut to it by libvips'
    /// attention model, as the Android variant of a portrait is cut, with `cut`).
    static func difference(_ file: String, from reference: String, cut: Bool = false, work: String, name: String) throws -> Double {
        let width = try ColourTests.vips(["-f", "width", file], program: "/usr/bin/vipsheader")
        let height = try ColourTests.vips(["-f", "height", file], program: "/usr/bin/vipsheader")
        _ = try ColourTests.vips(["thumbnail", reference, "\(work)/\(name)-ref.v", width, "--height", height, "--no-rotate"]
                                 + (cut ? ["--crop", "attention"] : ["--size", "force"]))
        // vips copy keeps the pixels as stored: no tag is applied.
        _ = try ColourTests.vips(["copy", file, "\(work)/\(name)-raw.v"])
        _ = try ColourTests.vips(["subtract", "\(work)/\(name)-raw.v", "\(work)/\(name)-ref.v", "\(work)/\(name)-d.v"])
        _ = try ColourTests.vips(["abs", "\(work)/\(name)-d.v", "\(work)/\(name)-a.v"])
        return try #require(Double(try ColourTests.vips(["avg", "\(work)/\(name)-a.v"])))
    }

    /// A 16:9 frame of FFmpeg's test pattern, 640x360, at `work`/pattern.png.
    static func makePattern(in work: Scratch) throws {
        let run = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360",
                                               "-frames:v", "1", "\(work.path)/pattern.png"])
        try #require(run.status == 0, "\(run.errors)")
    }

    @Test func everyOrientationGetsAnUprightAndroidVariant() async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        try await offPool {
            // A 16:9 frame of the test pattern, under 1 MB: Android would take it as it is.
            try Self.makePattern(in: work)
            for orientation in 1...8 {
                try writeOrientedJPEG(from: "\(work.path)/pattern.png", to: "\(media.path)/o\(orientation).jpg", orientation: orientation)
                _ = try ColourTests.vips(["autorot", "\(media.path)/o\(orientation).jpg", "\(work.path)/upright\(orientation).v"])
            }
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let batch = await pipeline.process((1...8).map { AttachmentRequest(url: "\(server.baseURL)/media/o\($0).jpg") },
                                                   deadline: .seconds(30))
                for (orientation, d) in zip(1...8, batch.attachments) {
                    #expect(d.status == .ready, "\(orientation): \(d.reason?.message ?? "")")
                    let upright = "\(work.path)/upright\(orientation).v"
                    let turned = orientation >= 5
                    #expect(d.width == (turned ? 360 : 640) && d.height == (turned ? 640 : 360), "\(orientation): \(String(describing: d.width))x\(String(describing: d.height))")
                    let thumbnail = try #require(d.thumbnail?.file, "\(orientation)")
                    let thumbnailOff = try await offPool { try Self.difference(thumbnail, from: upright, work: work.path, name: "t\(orientation)") }
                    #expect(thumbnailOff < 6, "\(orientation): the thumbnail is \(thumbnailOff) off the upright source")
                    let variant = d.variants?["android"]
                    guard orientation != 1 else {
                        #expect(variant == nil, "an upright JPEG under 1 MB needs no variant: \(String(describing: variant))")
                        continue
                    }
                    let file = try #require(variant?.file, "\(orientation): no Android variant")
                    let tags = try ColourTests.vips(["-a", file], program: "/usr/bin/vipsheader")
                    #expect(!tags.contains("orientation") && !tags.contains("Orientation"), "\(orientation): the variant keeps a tag")
                    // A portrait's variant is its 2:1 cut, landscape.
                    #expect(variant?.width.map { $0 > (variant?.height ?? .max) } == true, "\(orientation): \(String(describing: variant))")
                    let variantOff = try await offPool { try Self.difference(file, from: upright, cut: turned, work: work.path, name: "v\(orientation)") }
                    #expect(variantOff < 6, "\(orientation): the Android variant is \(variantOff) off the upright source")
                    // A landscape that needs only the turn is turned losslessly: its decoded
                    // pixels are the upright source's, but for the IDCT's rounding.
                    if !turned {
                        #expect(variant?.transforms == [.oriented], "\(orientation): \(String(describing: variant?.transforms))")
                        #expect(variantOff < 0.5, "\(orientation): a lossless turn is \(variantOff) off the upright source")
                    }
                    // The stored pixels alone would be far off (the check can fail).
                    let asStored = try await offPool { try Self.difference("\(media.path)/o\(orientation).jpg", from: upright, work: work.path, name: "s\(orientation)") }
                    if !turned { #expect(asStored > 10, "\(orientation): the stored pixels are only \(asStored) off") }
                }
            }
        }
    }

    /// A JPEG with two EXIF blocks that disagree (6 then 1, 1 then 6: a tool that added its own
    /// block after the camera's) is delivered saying one thing: its pixels turned as the first
    /// block says (libvips' reading, which the thumbnail and the size follow) and no tag
    /// (`oriented`), so that no reader can take the other block. Its edges are whole MCU blocks
    /// (4:4:4, 640x360), so the turn is lossless, and a Display P3 photo keeps its profile.
    @Test(arguments: [(6, 1, false), (1, 6, false), (6, 1, true)])
    func exifBlocksThatDisagreeAreMadeOne(first: Int, second: Int, p3: Bool) async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        let name = "exif-\(first)-\(second)\(p3 ? "-p3" : "").jpg", source = "\(media.path)/\(name)", upright = "\(work.path)/upright.v"
        try await offPool {
            try Self.makePattern(in: work)
            _ = try ColourTests.vips(p3 ? ["icc_transform", "\(work.path)/pattern.png", "\(work.path)/bare.jpg[Q=95]", "p3", "--input-profile", "srgb"]
                                        : ["copy", "\(work.path)/pattern.png", "\(work.path)/bare.jpg[Q=95,strip]"])
            let bare = Self.withoutEXIF(try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(work.path)/bare.jpg"))))
            try Data(bare[..<2] + Self.exifSegment(orientation: first) + Self.exifSegment(orientation: second) + bare[2...])
                .write(to: URL(fileURLWithPath: source))
            _ = try ColourTests.vips(["autorot", source, upright])
            // The sRGB outputs are compared with the upright source rendered to sRGB.
            _ = try ColourTests.vips(["icc_transform", upright, "\(work.path)/upright-srgb.v", "srgb", "--embedded"])
        }
        let portrait = first >= 5
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/\(name)", pipeline)
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                #expect(d.transforms == [.oriented], "a lossless turn: \(String(describing: d.transforms))")
                #expect(d.width == (portrait ? 360 : 640) && d.height == (portrait ? 640 : 360), "\(String(describing: d.width))x\(String(describing: d.height))")
                let file = try #require(d.file)
                let tags = try ColourTests.vips(["-a", file], program: "/usr/bin/vipsheader")
                #expect(!tags.contains("orientation") && !tags.contains("exif"), "the delivered file keeps a tag")
                #expect(tags.contains("icc-profile-data") == p3, "the profile kept: \(p3)")
                let off = try await offPool { try Self.difference(file, from: upright, work: work.path, name: "attachment") }
                #expect(off < 0.5, "attachment: \(off) off the source as its first EXIF block turns it")
                let thumbnailOff = try await offPool {
                    try Self.difference(try #require(d.thumbnail?.file), from: "\(work.path)/upright-srgb.v", work: work.path, name: "thumbnail")
                }
                #expect(thumbnailOff < 6, "thumbnail: \(thumbnailOff) off the source as its first EXIF block turns it")
                if let variant = d.variants?["android"]?.file {
                    let off = try await offPool { try Self.difference(variant, from: "\(work.path)/upright-srgb.v", cut: portrait, work: work.path, name: "android") }
                    #expect(off < 6, "android: \(off) off the source as its first EXIF block turns it")
                } else {
                    #expect(!portrait && !p3, "a turned or P3 photo needs an Android variant")
                }
            }
        }
    }

    /// `jpeg` without its APP1 (EXIF, XMP) segments.
    static func withoutEXIF(_ jpeg: [UInt8]) -> [UInt8] {
        var kept = Array(jpeg[..<2]), offset = 2
        while offset + 4 <= jpeg.count, jpeg[offset] == 0xFF, jpeg[offset + 1] != 0xDA {
            let end = offset + 2 + (Int(jpeg[offset + 2]) << 8 | Int(jpeg[offset + 3]))
            if jpeg[offset + 1] != 0xE1 { kept += jpeg[offset..<end] }
            offset = end
        }
        return kept + jpeg[offset...]
    }

    /// A CMYK JPEG without a profile, stored upside down (orientation 3): its Android variant
    /// is turned and in sRGB, never a lossless turn of its CMYK blocks, which Android's decoder
    /// would show as sRGB numbers.
    @Test func aCMYKPhotoStoredTurnedGetsAnSRGBVariant() async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        try await offPool {
            try Self.makePattern(in: work)
            _ = try ColourTests.vips(["icc_transform", "\(work.path)/pattern.png", "\(work.path)/bare.jpg[Q=95,strip]", "cmyk", "--input-profile", "srgb"])
            let bare = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(work.path)/bare.jpg")))
            try Data(bare[..<2] + Self.exifSegment(orientation: 3) + bare[2...]).write(to: URL(fileURLWithPath: "\(media.path)/cmyk3.jpg"))
        }
        #expect(try ColourTests.vips(["-f", "bands", "\(media.path)/cmyk3.jpg"], program: "/usr/bin/vipsheader") == "4")
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/cmyk3.jpg", pipeline)
                let variant = try #require(d.variants?["android"]?.file, "\(d.reason?.message ?? "no Android variant")")
                #expect(try ColourTests.vips(["-f", "bands", variant], program: "/usr/bin/vipsheader") == "3")
                #expect(d.variants?["android"]?.transforms?.contains(.oriented) == false)
            }
        }
    }

    /// An APP1 segment holding EXIF whose IFD0 has one entry, the orientation (big-endian TIFF).
    static func exifSegment(orientation: Int) -> [UInt8] {
        let tiff: [UInt8] = [0x4D, 0x4D, 0, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, UInt8(orientation), 0, 0, 0, 0, 0, 0]
        let body = Array("Exif\0\0".utf8) + tiff
        return [0xFF, 0xE1, UInt8((body.count + 2) >> 8), UInt8((body.count + 2) & 0xFF)] + body
    }

    /// The thumbnail answer's orientation and profile cross the worker's socket as they were
    /// (`JobWire`'s last byte), and a byte with bits it never writes is refused.
    @Test func aThumbnailAnswerCarriesOrientationAndProfile() throws {
        var turned = ThumbnailOutcome(sourceWidth: 3024, sourceHeight: 4032, file: "/x/r.jpg", width: 240, height: 320)
        (turned.orientation, turned.hasColourProfile, turned.orientationsDisagree) = (6, true, true)
        for made in [turned, ThumbnailOutcome(sourceWidth: 4, sourceHeight: 3, file: "p.jpg", width: 4, height: 3)] {
            let wire = try #require(JobWire.encode(DecodeAnswer(.success(made), \.thumbnail)))
            let back = try #require(JobWire.decodeAnswer(wire)?.thumbnail)
            #expect(back.orientation == made.orientation && back.hasColourProfile == made.hasColourProfile
                    && back.orientationsDisagree == made.orientationsDisagree)
            var forged = wire
            forged[forged.count - 1] = 0x40
            #expect(JobWire.decodeAnswer(forged) == nil)
            forged[forged.count - 1] = 0x09
            #expect(JobWire.decodeAnswer(forged) == nil, "orientation 9")
        }
    }
}
