/// Colour an HEIF or AVIF file states as code points (an `nclx` colour property: ITU-T H.273's
/// primaries, transfer and matrix) instead of an ICC profile, as AVIF encoders and Chrome's
/// write it. libheif turns the pixels to RGB with the matrix and says nothing of the primaries,
/// so libvips would read Display P3's numbers as sRGB's. For primaries libvips has a profile
/// of, that profile stands for the statement (`Vips.withStatedProfile`): the attachment carries
/// it, and the pictures converted to sRGB go through it.
enum HEIFStatedColour {
    /// libvips' built-in profile for the primaries the file's first `nclx` property states,
    /// when they are not sRGB's (BT.709's) and libvips has one: `p3` for Display P3 (H.273
    /// primaries 12) with sRGB's or BT.709's transfer. Nil for a file with an ICC profile
    /// (`prof`, `rICC`: it wins), without `nclx`, or stating anything else.
    static func fallbackProfile(_ path: String) -> String? {
        guard let data = HEIFImageSize.header(path) else { return nil }
        for colr in HEIFImageSize.properties(data, named: "colr") where colr.count >= 4 {
            let kind = String(decoding: data[colr.lowerBound..<colr.lowerBound + 4], as: UTF8.self)
            if kind == "prof" || kind == "rICC" { return nil }
            guard kind == "nclx", colr.count >= 10 else { continue }
            let word = { (at: Int) in Int(data[colr.lowerBound + at]) << 8 | Int(data[colr.lowerBound + at + 1]) }
            let (primaries, transfer) = (word(4), word(6))
            // 1: BT.709, 6: BT.601, 13: sRGB; PQ and HLG (16, 18) are high dynamic range, not this.
            return primaries == 12 && [1, 6, 13].contains(transfer) ? "p3" : nil
        }
        return nil
    }
}
