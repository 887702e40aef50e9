import Foundation
import Testing
@testable import AttachFetch

/// The Android variant cut to 2:1 around what matters, and the square iOS shows as the
/// thumbnail, on pictures made with the `vips` command: a flat grey field with one patch of
/// coloured noise (a subject libvips' attention model sees) away from the middle.
@Suite struct PictureCropTests {
    /// `width` x `height` flat grey with a `side`-pixel patch of colour noise at (`left`, `top`), as a JPEG.
    static func picture(_ path: String, width: Int, height: Int, patchAt left: Int, _ top: Int, side: Int = 300) throws {
        let work = (path as NSString).deletingLastPathComponent
        func vips(_ arguments: [String]) throws {
            let run = try tool("/usr/bin/vips", arguments)
            guard run.status == 0 else { throw ToolFailed(description: "vips \(arguments.joined(separator: " ")): \(run.errors)") }
        }
        try vips(["black", "\(work)/bg.v", "\(width)", "\(height)", "--bands", "3"])
        try vips(["linear", "\(work)/bg.v", "\(work)/grey.v", "1", "128"])
        for band in ["r", "g", "b"] { try vips(["gaussnoise", "\(work)/\(band).v", "\(side)", "\(side)", "--sigma", "90", "--mean", "128"]) }
        try vips(["bandjoin", "\(work)/r.v \(work)/g.v \(work)/b.v", "\(work)/patch.v"])
        try vips(["cast", "\(work)/patch.v", "\(work)/patch8.v", "uchar"])
        try vips(["insert", "\(work)/grey.v", "\(work)/patch8.v", "\(work)/picture.v", "\(left)", "\(top)"])
        try vips(["jpegsave", "\(work)/picture.v", path, "--Q", "90"])
    }

    /// The standard deviation of a file's pixels (`vips deviate`): near 0 for the flat field,
    /// high where the patch is.
    static func deviation(_ path: String) throws -> Double {
        let run = try tool("/usr/bin/vips", ["deviate", path])
        return try #require(Double(run.output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(run.errors)")
    }

    struct ToolFailed: Error, CustomStringConvertible { var description: String }

    func process(_ server: String, _ name: String, _ pipeline: AttachmentPipeline, crop: CropMode? = nil,
                 focus: FocusPoint? = nil, clip: ClippingRectangle? = nil) async -> AttachmentDescriptor {
        var request = AttachmentRequest(url: "\(server)/media/\(name)", clip: clip)
        (request.crop, request.focus) = (crop, focus)
        return await pipeline.process([request], deadline: .seconds(20)).attachments[0]
    }

    /// A square photo whose subject sits low and left: its Android variant is 2:1, 1024x512,
    /// `cropped`, and holds the subject, where a centred cut holds half of it and a cut at
    /// the top none; a focal point moves the cut; `none` makes no variant.
    @Test func theAndroidVariantIsA2To1CropAroundTheSubject() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool { try Self.picture("\(media.path)/square.jpg", width: 1200, height: 1200, patchAt: 100, 750) }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                var deviations: [String: Double] = [:]
                for (name, crop, focus) in [("attention", nil as CropMode?, nil as FocusPoint?), ("centre", .centre, nil),
                                             ("top", nil, try FocusPoint(x: 0.5, y: 0)), ("subject", nil, try FocusPoint(x: 0.2, y: 0.75))] {
                    let d = await process(server.baseURL, "square.jpg", pipeline, crop: crop, focus: focus)
                    #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                    let variant = try #require(d.variants?["android"], "\(name): no Android variant")
                    #expect(variant.width == 1024 && variant.height == 512 && variant.transforms?.contains(.cropped) == true, "\(name): \(variant)")
                    #expect((variant.bytes ?? .max) <= Platform.androidImageLimit)
                    deviations[name] = try Self.deviation(try #require(variant.file))
                }
                print("2:1 crops of a square photo, deviation of the pixels: \(deviations.sorted { $0.key < $1.key })")
                let attention = try #require(deviations["attention"]), centre = try #require(deviations["centre"])
                #expect(attention > centre * 1.3, "attention \(attention) against centre \(centre)")
                #expect(try #require(deviations["top"]) < 5, "a cut at the top holds only the grey field")
                #expect(try #require(deviations["subject"]) > centre * 1.3)
                let none = await process(server.baseURL, "square.jpg", pipeline, crop: CropMode.none)
                #expect(none.variants?["android"] == nil && none.thumbnailClip == nil, "\(String(describing: none.variants))")
            }
        }
    }

    /// A 2:1 picture with its subject at the far left: the iOS thumbnail's square covers the
    /// subject (a centred square would miss it), a caller's clip wins, and an image already
    /// about 2:1 gets no Android crop.
    @Test func theThumbnailSquareCoversTheSubject() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool { try Self.picture("\(media.path)/wide.jpg", width: 1600, height: 800, patchAt: 100, 250) }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let d = await process(server.baseURL, "wide.jpg", pipeline)
                let square = try #require(d.thumbnailClip, "no thumbnail square")
                // Square in pixels: half the width of a 2:1 image, all its height.
                #expect(abs(square.width - 0.5) < 0.01 && abs(square.height - 1) < 0.01, "\(square)")
                #expect(square.x * 1600 <= 100 + 8 && (square.x + square.width) * 1600 >= 400 - 8, "the square \(square) misses the subject at 100-400")
                #expect(d.variants?["android"] == nil, "a 2:1 JPEG under 1 MB is shown as it is")
                let clipped = await process(server.baseURL, "wide.jpg", pipeline, clip: try ClippingRectangle(x: 0.5, y: 0, width: 0.5, height: 1))
                #expect(clipped.status == .ready && clipped.thumbnailClip == nil)
                let focused = await process(server.baseURL, "wide.jpg", pipeline, focus: try FocusPoint(x: 1, y: 0.5))
                #expect(try #require(focused.thumbnailClip).x > 0.49, "the focal point at the right edge moves the square there")
            }
        }
    }

    /// Results made under one crop are never served for another: each is its own work.
    @Test func theCropIsPartOfTheResultsKey() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool { try Self.picture("\(media.path)/square.jpg", width: 800, height: 800, patchAt: 50, 450, side: 200) }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android]; $0.cache = ResultCaching() }) { pipeline in
                let first = await process(server.baseURL, "square.jpg", pipeline)
                let again = await process(server.baseURL, "square.jpg", pipeline)
                let centred = await process(server.baseURL, "square.jpg", pipeline, crop: .centre)
                #expect(first.cache == .miss && again.cache == .hit && centred.cache == .miss,
                        "\(String(describing: first.cache)) \(String(describing: again.cache)) \(String(describing: centred.cache))")
                #expect(first.thumbnailClip == again.thumbnailClip)
            }
        }
    }

    /// A portrait video's poster, as its Android variant, is cut to 2:1 too, and the poster
    /// suggests the iOS thumbnail's square.
    @Test func aPortraitVideosPosterIsCutTo2To1() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try VideoTranscodeTests.make(media.path, "portrait.mp4", size: "360x640", seconds: 2, audio: false,
                                         ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"])
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let d = await process(server.baseURL, "portrait.mp4", pipeline)
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                let variant = try #require(d.variants?["android"])
                #expect(variant.transforms?.contains(.cropped) == true, "\(variant)")
                #expect(variant.width.map { w in variant.height.map { w == 2 * $0 } ?? false } == true, "\(variant)")
                let square = try #require(d.thumbnailClip)
                #expect(abs(square.width - 1) < 0.01 && abs(square.height - 9.0 / 16) < 0.02, "\(square)")
            }
        }
    }
    /// A portrait photo of a person, as people send them: Grace Hopper's portrait from Pillow's
    /// published test images (the corpus), at the top of a tall frame whose lower part is plain,
    /// the way a portrait's face sits high. A centred 2:1 cut holds none of her; the attention
    /// cut and the iOS square hold her face.
    @Test(.enabled(if: RealWorldCorpusTests.directory != nil, "no corpus: run scripts/corpus.sh"))
    func aPortraitKeepsTheFaceAtItsTop() async throws {
        let corpus = try #require(RealWorldCorpusTests.directory)
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            for arguments in [["resize", "\(corpus)/pillow__hopper.jpg", "\(media.path)/face.v", "4"],
                              ["embed", "\(media.path)/face.v", "\(media.path)/portrait.v", "0", "0", "512", "1280",
                               "--extend", "background", "--background", "40 40 40"],
                              ["jpegsave", "\(media.path)/portrait.v", "\(media.path)/portrait.jpg", "--Q", "90"]] {
                let run = try tool("/usr/bin/vips", arguments)
                try #require(run.status == 0, "vips \(arguments): \(run.errors)")
            }
        }
        // Her eyes and mouth: rows 180 to 300 of 1280 (45 to 75 of the original 128, four times).
        let face = (top: 180.0 / 1280, bottom: 300.0 / 1280)
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let attention = await process(server.baseURL, "portrait.jpg", pipeline)
                let centre = await process(server.baseURL, "portrait.jpg", pipeline, crop: .centre)
                let attentionCut = try #require(attention.variants?["android"]?.file), centreCut = try #require(centre.variants?["android"]?.file)
                let (held, missed) = (try Self.deviation(attentionCut), try Self.deviation(centreCut))
                #expect(held > 20 && missed < 5, "deviation of the 2:1 cuts: attention \(held), centre \(missed)")
                let square = try #require(attention.thumbnailClip, "no thumbnail square")
                #expect(square.y <= face.top && square.y + square.height >= face.bottom, "the square \(square) misses rows \(face)")
                print("portrait: attention cut deviation \(held), centre \(missed); square \(square)")
            }
        }
    }
}
