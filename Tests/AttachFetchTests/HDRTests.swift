import Foundation
import Testing
@testable import AttachFetch

/// High-dynamic-range video (PQ, HLG) shows as standard dynamic range wherever attach-fetch
/// makes a picture or re-encodes: the poster, and a transcode, are tone-mapped to BT.709 and
/// tagged so; an HEVC Main 10 clip iOS plays is delivered as it is, its tags with it. The
/// reference is the `ffmpeg` program's tone mapping of the same frame (zscale, tonemap).
@Suite struct HDRTests {
    /// The ffmpeg program's tone mapping to BT.709 at `size` ("w:h", nil: the source's), then
    /// 8-bit RGB. `transfer`: the source's, for a frame that states none (FFmpeg reads no PNG
    /// `cICP`), with BT.2020's primaries named on both sides.
    static func toneMapping(_ size: String?, transfer: String? = nil) -> String {
        let parts = size?.split(separator: ":") ?? []
        let scaled = parts.count == 2 ? "w=\(parts[0]):h=\(parts[1]):" : ""
        let stated = transfer.map { "tin=\($0):pin=2020:p=2020:" } ?? ""
        return "zscale=\(scaled)\(stated)t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,"
            + "tonemap=tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p,"
            + "scale=in_color_matrix=bt709:in_range=tv,format=rgb24"
    }

    /// A second of saturated gradients at 1280x720, 10-bit, tagged BT.2020 with `transfer`.
    static func make(_ path: String, transfer: String, _ codec: [String]) throws {
        let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                                                "gradients=s=1280x720:c0=red:c1=lime:c2=blue:c3=white:c4=yellow:n=5:speed=0.00001:rate=25",
                                                "-t", "1", "-pix_fmt", "yuv420p10le", "-color_primaries", "bt2020", "-color_trc", transfer,
                                                "-colorspace", "bt2020nc"] + codec + [path])
        try #require(made.status == 0, "\(made.errors)")
    }

    /// The mean absolute difference, per pixel and band, of two images of one size.
    static func difference(_ a: String, _ b: String, work: String) throws -> Double {
        let name = UUID().uuidString
        _ = try ColourTests.vips(["subtract", a, b, "\(work)/\(name)-d.v"])
        _ = try ColourTests.vips(["abs", "\(work)/\(name)-d.v", "\(work)/\(name)-a.v"])
        return try #require(Double(try ColourTests.vips(["avg", "\(work)/\(name)-a.v"])))
    }

    /// Frame 0 of `file` rendered by ffmpeg with `filter`, as a PNG in `work`.
    static func render(_ file: String, _ filter: String, work: String) async throws -> String {
        let out = "\(work)/\(UUID().uuidString).png"
        let run = try await tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-i", file, "-frames:v", "1", "-vf", filter, out])
        try #require(run.status == 0, "\(run.errors)")
        return out
    }

    static func colour(_ file: String) async throws -> [String: String] {
        let read = try await tool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries",
                                                       "stream=codec_name,pix_fmt,color_transfer,color_primaries,color_space", "-of", "default=nw=1", file])
        return Dictionary(read.output.split(separator: "\n").compactMap { line -> (String, String)? in
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }, uniquingKeysWith: { a, _ in a })
    }

    @Test func pqAndHLGPostersAndTranscodesAreToneMappedAndTagged() async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        try await offPool {
            // H.264 High 10 (iOS does not play it): transcoded.
            try Self.make("\(media.path)/pq.mp4", transfer: "smpte2084", ["-c:v", "libx264", "-profile:v", "high10", "-preset", "ultrafast"])
            // HEVC Main 10 tagged hvc1, as an iPhone records HLG: delivered as it is.
            try Self.make("\(media.path)/hlg.mp4", transfer: "arib-std-b67",
                          ["-c:v", "libx265", "-x265-params", "log-level=error", "-tag:v", "hvc1"])
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                for (name, transfer) in [("pq.mp4", "smpte2084"), ("hlg.mp4", "arib-std-b67")] {
                    let source = "\(media.path)/\(name)"
                    #expect(try await Self.colour(source)["color_transfer"] == transfer, "\(name): the source is not tagged \(transfer)")
                    let d = await fetchOne("\(server.baseURL)/media/\(name)", pipeline, thumbnailTime: 0)
                    #expect(d.status == .ready, "\(name): \(d.reason?.message ?? "")")
                    let poster = try #require(d.thumbnail, "\(name): no poster")
                    let size = "\(poster.width):\(poster.height)"
                    let reference = try await Self.render(source, Self.toneMapping(size), work: work.path)
                    let untouched = try await Self.render(source, "scale=\(size):in_color_matrix=bt2020:in_range=tv:flags=area,format=rgb24", work: work.path)
                    let off = try Self.difference(poster.file, reference, work: work.path)
                    let offUntouched = try Self.difference(poster.file, untouched, work: work.path)
                    print("\(name) poster: \(off) off ffmpeg's tone mapping, \(offUntouched) off the frame not tone-mapped")
                    #expect(off < 3, "\(name): the poster is \(off) off the tone-mapped frame")
                    #expect(offUntouched > 3 * max(off, 1), "\(name): the poster (\(offUntouched) off the untouched frame) is not told from it")

                    // The Android picture, a 2:1 crop of the same frame at the source's size, against the whole
                    // frame tone-mapped (`media-check compare` places the crop where it matches best).
                    let android = try #require(d.variants?["android"]?.file, "\(name): no Android picture")
                    let wholeMapped = try await Self.render(source, Self.toneMapping("1280:720"), work: work.path)
                    let wholeUntouched = try await Self.render(source, "scale=in_color_matrix=bt2020:in_range=tv,format=rgb24", work: work.path)
                    let checker = try MediaChecker()
                    defer { checker.close() }
                    let androidOff = try #require(try checker.difference(source: wholeMapped, output: android).difference)
                    let androidUntouched = try #require(try checker.difference(source: wholeUntouched, output: android).difference)
                    print("\(name) Android picture: \(androidOff) off the tone-mapped frame, \(androidUntouched) off the untouched one")
                    #expect(androidOff < 4 && androidUntouched > 3 * max(androidOff, 1), "\(name): Android picture \(androidOff), untouched \(androidUntouched)")

                    let file = try #require(d.file)
                    let delivered = try await Self.colour(file)
                    if name == "pq.mp4" {
                        #expect(d.transforms == [.transcoded] && delivered["codec_name"] == "h264" && delivered["pix_fmt"] == "yuv420p", "\(delivered)")
                        #expect(delivered["color_transfer"] == "bt709" && delivered["color_primaries"] == "bt709" && delivered["color_space"] == "bt709",
                                "the transcode's tags: \(delivered)")
                        let made = try await Self.render(file, "scale=in_color_matrix=bt709:in_range=tv,format=rgb24", work: work.path)
                        let width = try ColourTests.vips(["-f", "width", made], program: "/usr/bin/vipsheader"), height = try ColourTests.vips(["-f", "height", made], program: "/usr/bin/vipsheader")
                        let mapped = try await Self.render(source, Self.toneMapping("\(width):\(height)"), work: work.path)
                        let frameOff = try Self.difference(made, mapped, work: work.path)
                        print("pq.mp4 transcode's first frame: \(frameOff) off ffmpeg's tone mapping")
                        #expect(frameOff < 4, "the transcode's first frame is \(frameOff) off the tone-mapped source")
                    } else {
                        #expect(d.transforms == [] && delivered["codec_name"] == "hevc" && delivered["color_transfer"] == "arib-std-b67"
                                && delivered["color_primaries"] == "bt2020", "the HLG clip is delivered as it is, tags and all: \(d.transforms ?? []) \(delivered)")
                    }
                }
            }
        }
    }

    /// An SDR source's tags go along into a transcode: a WebM (VP9) tagged BT.709.
    @Test func aTranscodeKeepsAnSDRSourcesTags() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=s=640x360:rate=25", "-t", "1",
                                                    "-pix_fmt", "yuv420p", "-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709",
                                                    "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "\(media.path)/sdr.webm"])
            try #require(made.status == 0, "\(made.errors)")
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/sdr.webm", pipeline)
                let file = try #require(d.file, "\(d.reason?.message ?? "")")
                let delivered = try await Self.colour(file)
                #expect(delivered["color_transfer"] == "bt709" && delivered["color_primaries"] == "bt709" && delivered["color_space"] == "bt709",
                        "the transcode's tags: \(delivered)")
            }
        }
    }
}
