import Foundation
import Testing
@testable import AttachFetch

/// A video's Android picture is a picture: its poster frame at the source's resolution, cut to
/// 2:1 as an image's is (at most 1024x512, within 1,000,000 bytes), not the 320-px thumbnail,
/// which made a portrait clip's 180x90 and a 1080p one's 320x180. Checked against the frame
/// `ffmpeg` decodes at the poster's time: the picture is a window of it.
@Suite struct AndroidPictureTests {
    /// A clip of `ffmpeg`'s moving test pattern, `width` x `height`, 2 s, tagged BT.709 (an
    /// untagged one's matrix is a guess, which players make by its size).
    static func clip(_ path: String, width: Int, height: Int) throws {
        let run = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=s=\(width)x\(height):rate=25",
                                               "-t", "2", "-vf", "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p",
                                               "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709",
                                               "-c:v", "libx264", "-preset", "ultrafast", path])
        guard run.status == 0 else { throw PictureCropTests.ToolFailed(description: "ffmpeg: \(run.errors)") }
    }

    /// A greyscale image's pixels, through `vips` (its luma, as 8-bit PGM).
    static func luma(_ file: String, width: String? = nil, work: String, name: String) throws -> (width: Int, height: Int, pixels: [UInt8]) {
        var source = file
        if let width {
            _ = try ColourTests.vips(["thumbnail", file, "\(work)/\(name)-scaled.v", width, "--height", "100000"])
            source = "\(work)/\(name)-scaled.v"
        }
        _ = try ColourTests.vips(["colourspace", source, "\(work)/\(name)-bw.v", "b-w"])
        _ = try ColourTests.vips(["extract_band", "\(work)/\(name)-bw.v", "\(work)/\(name)-y.v", "0"])
        _ = try ColourTests.vips(["ppmsave", "\(work)/\(name)-y.v", "\(work)/\(name).pgm"])
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(work)/\(name).pgm")))
        // "P5", width, height, 255, each after whitespace or a comment line (vips writes one),
        // then one whitespace byte and the pixels.
        var fields: [Int] = [], index = 2
        while fields.count < 3 {
            while bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x23 {
                if bytes[index] == 0x23 { while bytes[index] != 0x0A { index += 1 } }
                index += 1
            }
            var value = 0
            while (0x30...0x39).contains(bytes[index]) { value = value * 10 + Int(bytes[index] - 0x30); index += 1 }
            fields.append(value)
        }
        return (fields[0], fields[1], Array(bytes[(index + 1)...]))
    }

    /// The root-mean-square luma difference (0-255) between `picture` and the window of
    /// `frame`, scaled to the picture's width, that matches it best: every offset in steps of
    /// 2 pixels, every third pixel of each row and column compared.
    static func bestWindowDifference(picture: String, frame: String, work: String) throws -> Double {
        let cut = try luma(picture, work: work, name: "picture")
        let whole = try luma(frame, width: String(cut.width), work: work, name: "frame")
        var best = Double.infinity
        for dy in stride(from: 0, through: max(0, whole.height - cut.height), by: 2) {
            for dx in stride(from: 0, through: max(0, whole.width - cut.width), by: 2) {
                var sum = 0, count = 0
                for y in stride(from: 0, to: min(cut.height, whole.height - dy), by: 3) {
                    for x in stride(from: 0, to: min(cut.width, whole.width - dx), by: 3) {
                        let d = Int(cut.pixels[y * cut.width + x]) - Int(whole.pixels[(y + dy) * whole.width + x + dx])
                        sum += d * d
                        count += 1
                    }
                }
                best = min(best, Double(sum) / Double(max(count, 1)))
            }
        }
        return best.squareRoot()
    }

    /// A portrait and a 4:3 clip are cut to 2:1; a 16:9 one keeps its shape, as an image
    /// between 1.5:1 and 2.5:1 does (docs/media.md, "Crops and the thumbnail square").
    @Test(arguments: [((720, 1280), (720, 360)), ((960, 720), (960, 480)), ((1920, 1080), (1920, 1080))])
    func aVideosAndroidPictureIsCutFromItsFullFrame(size: (Int, Int), expected: (Int, Int)) async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        try await offPool { try Self.clip("\(media.path)/clip.mp4", width: size.0, height: size.1) }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/clip.mp4", pipeline, thumbnailTime: 1)
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                let android = try #require(d.variants?["android"], "\(d.variants ?? [:])")
                let file = try #require(android.file, "\(android)")
                #expect(android.width == expected.0 && android.height == expected.1, "\(android) for \(size.0)x\(size.1)")
                let onDisk = try #require(imageSize(file))
                #expect(onDisk.width == expected.0 && onDisk.height == expected.1)
                let cut = expected.0 * 1080 != expected.1 * 1920
                #expect(fileSize(file) <= Platform.androidImageLimit && android.transforms?.contains(.cropped) == cut, "\(android)")
                let time = try #require(d.thumbnail?.time)
                let frame = "\(work.path)/frame.png"
                let run = try await tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-ss", "\(time)", "-i", "\(media.path)/clip.mp4",
                                                             "-frames:v", "1", "-vf", "scale=in_color_matrix=bt709:in_range=tv,format=rgb24", frame])
                try #require(run.status == 0, "\(run.errors)")
                let difference = try await offPool { try Self.bestWindowDifference(picture: file, frame: frame, work: work.path) }
                print("android picture of \(size.0)x\(size.1): \(difference) RMS from the best window of ffmpeg's frame at \(time) s")
                // Measured 3.7-6.6 (JPEG at quality 85 and two scalers); the same frame converted
                // with BT.601's matrix instead measured 17-18.
                #expect(difference < 10, "the picture is \(difference) RMS from every window of the poster's frame")
            }
        }
    }
}
