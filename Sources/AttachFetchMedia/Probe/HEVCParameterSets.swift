/// Which HEVC parameter sets a stream's header (its codec extradata) carries: the decoder
/// configuration record (`hvcC`, ISO/IEC 14496-15 8.3.3) of MPEG-4, or Annex B NAL units as
/// other containers give them. A stream tagged `hev1` may keep them only in its samples; a file
/// re-tagged `hvc1` must have them in the header, where iOS reads them.
enum HEVCParameterSets {
    /// NAL unit types of the video, sequence and picture parameter sets (H.265 table 7-1).
    static let required: Set<UInt8> = [32, 33, 34]

    /// Whether the header holds a VPS, an SPS and a PPS.
    static func inHeader(_ extradata: UnsafeBufferPointer<UInt8>) -> Bool {
        required.isSubset(of: types(in: extradata))
    }

    /// The NAL unit types the header holds; empty when it is neither form or is cut short.
    static func types(in data: UnsafeBufferPointer<UInt8>) -> Set<UInt8> {
        if data.count >= 23, data[0] == 1 { return recordTypes(data) }
        return annexBTypes(data)
    }

    /// hvcC: 22 bytes of profile and format, the number of arrays, then per array one byte whose
    /// low six bits are its NAL type, a 16-bit count, and per unit a 16-bit length and the unit.
    /// An array counts only when it holds a unit.
    private static func recordTypes(_ data: UnsafeBufferPointer<UInt8>) -> Set<UInt8> {
        var types: Set<UInt8> = []
        var at = 23
        func u16(_ i: Int) -> Int? { i + 1 < data.count ? Int(data[i]) << 8 | Int(data[i + 1]) : nil }
        for _ in 0..<Int(data[22]) {
            guard at < data.count, let count = u16(at + 1) else { return types }
            let type = data[at] & 0x3F
            at += 3
            for _ in 0..<count {
                guard let length = u16(at), at + 2 + length <= data.count else { return types }
                if length > 0 { types.insert(type) }
                at += 2 + length
            }
        }
        return types
    }

    /// Annex B: units after `00 00 01` start codes; the type is bits 1–6 of the unit's first byte.
    private static func annexBTypes(_ data: UnsafeBufferPointer<UInt8>) -> Set<UInt8> {
        var types: Set<UInt8> = []
        var i = 0
        while i + 3 < data.count {
            if data[i] == 0, data[i + 1] == 0, data[i + 2] == 1 {
                types.insert((data[i + 3] >> 1) & 0x3F)
                i += 3
            } else {
                i += 1
            }
        }
        return types
    }
}
