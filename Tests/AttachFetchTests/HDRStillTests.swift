import Foundation
import Testing
@testable import AttachFetch

/// A still that states PQ or HLG as code points (an AVIF's `nclx`, a PNG's `cICP`) shows as
/// standard dynamic range in every picture attach-fetch makes of it: the converted attachment,
/// the thumbnail and the Android variant are each compared with the `ffmpeg` program's tone
/// mapping of the source (`zscale`, `tonemap`; the recipe `ToneMapper` follows, given the
/// source's transfer and primaries explicitly), and each must be several times further off the
/// source's numbers read as sRGB, which is what libvips alone shows.
@Suite struct HDRStillTests {
    static func ffmpeg(_ arguments: [String]) throws {
        let run = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y"] + arguments)
        try #require(run.status == 0, "\(run.errors)")
    }

    @Test(arguments: ["pq.avif", "hlg.avif", "pq.png", "hlg.png"])
    func aPQOrHLGStillIsToneMapped(name: String) async throws {
        let media = Scratch(), scratch = Scratch(), work = Scratch()
        let source = "\(media.path)/\(name)", reference = "\(work.path)/reference.png", untouched = "\(work.path)/untouched.png"
        let pq = name.hasPrefix("pq"), avif = name.hasSuffix(".avif")
        let transfer = pq ? "smpte2084" : "arib-std-b67"
        try await offPool {
            try ColourTests.pattern("\(work.path)/pattern.png")
            // The pattern's colours in BT.2020's primaries with an HDR transfer, white at 203
            // nits (BT.2408's reference white): brighter than SDR's 100, so the mapping matters.
            let toHDR = "zscale=pin=709:tin=iec61966-2-1:p=2020:t=\(transfer):npl=203"
            if avif {
                try Self.ffmpeg(["-i", "\(work.path)/pattern.png", "-frames:v", "1",
                                 "-vf", "\(toHDR),format=gbrp16le,scale=out_color_matrix=bt2020nc:out_range=full,format=yuv444p10le",
                                 "-color_primaries", "bt2020", "-color_trc", transfer, "-colorspace", "bt2020nc", "-color_range", "pc",
                                 "-c:v", "libaom-av1", "-cpu-used", "8", "-crf", "4", "-still-picture", "1", source])
            } else {
                try Self.ffmpeg(["-i", "\(work.path)/pattern.png", "-frames:v", "1", "-vf", "\(toHDR),format=rgb48be", "\(work.path)/bare.png"])
                let bare = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(work.path)/bare.png")))
                // cICP after IHDR (8 + 25 bytes): BT.2020, PQ (16) or HLG (18), RGB, full range.
                try Data(bare[..<33] + ColourTests.pngChunk("cICP", [9, pq ? 16 : 18, 0, 1]) + bare[33...]).write(to: URL(fileURLWithPath: source))
            }
            try Self.ffmpeg(["-i", source, "-frames:v", "1", "-vf", HDRTests.toneMapping(nil, transfer: transfer), reference])
            _ = try ColourTests.vips(["colourspace", source, untouched, "srgb"])
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/\(name)", pipeline)
                let file = try #require(d.file, "\(d.reason?.message ?? "")")
                var outputs = [("thumbnail", try #require(d.thumbnail?.file))]
                if avif {
                    // Converted to a JPEG Android shows, which needs no variant of its own.
                    outputs += [("attachment", file), ("android", d.variants?["android"]?.file ?? file)]
                } else {
                    outputs.append(("android", try #require(d.variants?["android"]?.file, "an HDR PNG needs an Android variant")))
                    #expect(d.transforms == [], "a PNG within the limits is delivered as it came: \(String(describing: d.transforms))")
                }
                for (what, output) in outputs {
                    #expect(try !ColourTests.hasProfile(output), "\(what): a tone-mapped picture is sRGB, without a profile")
                    let off = try ColourTests.difference(output: output, source: reference, space: "srgb", work: work.path, name: what)
                    let asRead = try ColourTests.difference(output: output, source: untouched, space: "srgb", work: work.path, name: "\(what)-read")
                    print("\(name) \(what): \(off.meanPerBand) off ffmpeg's tone mapping, \(asRead.meanPerBand) off the numbers read as sRGB")
                    #expect(off.meanPerBand.allSatisfy { $0 <= 2 }, "\(what): \(off)")
                    #expect(asRead.meanPerBand.max()! > 3 * max(off.meanPerBand.max()!, 1), "\(what) is not told from the numbers read as sRGB: \(asRead)")
                }
            }
        }
    }
}
