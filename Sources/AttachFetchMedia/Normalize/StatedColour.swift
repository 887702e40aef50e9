import AttachFetchCore
internal import CVips
#if canImport(Glibc)
import Glibc
#endif

/// Colour a file states as code points (ITU-T H.273's primaries, transfer and matrix) instead
/// of an ICC profile: an HEIF or AVIF `colr` property of type `nclx`, as AVIF encoders and
/// Chrome write it, or a PNG `cICP` chunk. Neither libheif nor libpng tells libvips of the
/// primaries, so it would read Display P3's numbers as sRGB's. A profile stands for the
/// statement (`Vips.withStatedProfile`): libvips' own for Display P3, one LittleCMS makes for
/// BT.2020 (`RGBProfile`). An image made from the file carries it, and the pictures converted
/// to sRGB go through it. PQ and HLG are tone-mapped instead (`ToneMappedStill`).
enum StatedColour {
    /// The primaries and transfer the file states as code points: an HEIF's or AVIF's first
    /// `nclx`, a PNG's `cICP`; nil for a file without such a statement. Called only for a file
    /// libvips found no ICC profile in: an HEIF with `prof` or `rICC` is left to it; in a PNG,
    /// PNG's rule that `cICP` comes first does not matter for the rare file with both.
    static func statement(_ path: String) -> (primaries: Int, transfer: Int)? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // Most images are neither: one read of 16 bytes tells.
        var start = [UInt8](repeating: 0, count: 16)
        guard pread(fd, &start, start.count, 0) == start.count else { return nil }
        if start[4...7].elementsEqual("ftyp".utf8) { return heifStatement(path) }
        if start.starts(with: PNGChunkCheck.signature) { return pngStatement(fd) }
        return nil
    }

    /// The profile standing for H.273 `primaries` with `transfer`, if there is one: libvips'
    /// `p3` for Display P3 (primaries 12) with sRGB's or BT.709's transfer, `RGBProfile.bt2020`
    /// for BT.2020 (9) with an SDR transfer. Nil for sRGB's own primaries, and for PQ and HLG
    /// (16, 18), high dynamic range, which no profile stands for (`ToneMappedStill`).
    static func profile(_ statement: (primaries: Int, transfer: Int)) -> Vips.StatedProfile? {
        switch statement.primaries {
        // Transfer 1: BT.709, 6: BT.601, 13: sRGB.
        case 12 where [1, 6, 13].contains(statement.transfer): return .builtIn("p3")
        // BT.709's curve, by any of its names (14 and 15: BT.2020's, for 10 and 12 bits).
        case 9 where [1, 6, 14, 15].contains(statement.transfer): return RGBProfile.bt2020.map(Vips.StatedProfile.made)
        default: return nil
        }
    }

    /// The first `nclx` property's primaries and transfer; nil when a profile property (`prof`,
    /// `rICC`) comes first or there is no `nclx`.
    static func heifStatement(_ path: String) -> (primaries: Int, transfer: Int)? {
        guard let data = HEIFImageSize.header(path) else { return nil }
        for colr in HEIFImageSize.properties(data, named: "colr") where colr.count >= 4 {
            let kind = String(decoding: data[colr.lowerBound..<colr.lowerBound + 4], as: UTF8.self)
            if kind == "prof" || kind == "rICC" { return nil }
            guard kind == "nclx", colr.count >= 10 else { continue }
            let word = { (at: Int) in Int(data[colr.lowerBound + at]) << 8 | Int(data[colr.lowerBound + at + 1]) }
            return (word(4), word(6))
        }
        return nil
    }

    /// A PNG's `cICP` chunk (primaries, transfer, matrix, full range: a byte each), which
    /// must come before the image data: the chunk headers before the first `IDAT` are walked,
    /// at most `maxChunksWalked`. Only RGB (matrix 0) at full range is a statement libvips'
    /// pixels can follow.
    static func pngStatement(_ fd: Int32) -> (primaries: Int, transfer: Int)? {
        var offset: off_t = 8
        var header = [UInt8](repeating: 0, count: 12)
        for _ in 0..<maxChunksWalked {
            guard pread(fd, &header, header.count, offset) == header.count else { return nil }
            let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
            switch String(decoding: header[4..<8], as: UTF8.self) {
            case "cICP":
                guard length == 4 else { return nil }
                // The chunk's 4 bytes are the header's last 4.
                return header[10] == 0 && header[11] == 1 ? (Int(header[8]), Int(header[9])) : nil
            case "IDAT", "IEND":
                return nil
            default:
                guard length >= 0, length < 1 << 31 else { return nil }
                offset += off_t(12 + length)
            }
        }
        return nil
    }

    /// Chunks before the image data are a handful (IHDR, colour and text chunks); a file with
    /// more is not looked through further.
    static let maxChunksWalked = 64
}

/// How a still's colour is read, once for every picture made of it: its ICC profile (which
/// LittleCMS parses to judge), a profile standing for the code points it states, or a PQ or
/// HLG statement, for which pictures are tone-mapped.
struct SourceColour {
    let hasProfile: Bool
    let stated: Vips.StatedProfile?
    let toneMapped: (primaries: Int, transfer: Int)?

    init(_ image: VipsImageRef, source: String) {
        hasProfile = image.hasColourProfile
        let statement = hasProfile ? nil : StatedColour.statement(source)
        stated = statement.flatMap(StatedColour.profile)
        toneMapped = statement.flatMap { ToneMappedStill.isHighDynamicRange($0) ? $0 : nil }
    }

    /// Whether a profile says how to show the numbers (its own, or one standing for the statement).
    var profiled: Bool { hasProfile || stated != nil }

    /// `source` decoded, turned and scaled to `width` x `height` (`Vips.thumbnail`), converted
    /// to sRGB through the profile when `toSRGB`, else carrying it; a PQ or HLG still
    /// tone-mapped, without a profile.
    func scaled(_ source: String, width: Int, height: Int, failOn: VipsFailOn, toSRGB: Bool) throws(Reason) -> VipsImageRef {
        if let toneMapped {
            return try ToneMappedStill.image(source, statement: toneMapped, width: width, height: height, failOn: failOn)
        }
        return try Vips.thumbnail(source, width: width, height: height, failOn: failOn, toSRGB: toSRGB, statedProfile: stated)
    }
}
