/// MPEG audio layer III (MP3) frame headers, read from bytes: enough to tell a run of real
/// frames from noise where libmagic names nothing.
///
/// A header is 4 bytes: 11 sync bits, the version (MPEG-1, 2 or 2.5), the layer, a bitrate and
/// a sample-rate index, and a padding bit; together they give the frame's length, so the next
/// header's place is known. One valid header in noise is a 1-in-5,000 chance; three chained
/// ones are what an encoder writes.
enum MPEGAudioFrames {
    /// Frames chained in a row that make a run.
    static let runLength = 3

    /// The offset of the first run of `runLength` chained frames in `bytes`, or nil. With
    /// `complete` (the bytes are the whole body), a shorter run that ends exactly at the end
    /// counts too, if it has two frames.
    static func firstRun(in bytes: UnsafeRawBufferPointer, complete: Bool) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for start in 0..<(bytes.count - 3) where bytes[start] == 0xFF {
            var offset = start
            var chained = 0
            while offset + 4 <= bytes.count, let length = frameLength(bytes, at: offset) {
                chained += 1
                offset += length
                if chained >= runLength { return start }
            }
            if complete && chained >= 2 && offset == bytes.count { return start }
        }
        return nil
    }

    /// The length in bytes of the layer III frame whose header starts at `offset`, or nil when
    /// the 4 bytes there are not a valid layer III header.
    static func frameLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        let b1 = bytes[offset + 1], b2 = bytes[offset + 2]
        guard bytes[offset] == 0xFF, b1 & 0xE0 == 0xE0 else { return nil }
        let version = (b1 >> 3) & 0x3   // 0: MPEG-2.5, 2: MPEG-2, 3: MPEG-1 (1 is reserved)
        let layer = (b1 >> 1) & 0x3     // 1: layer III
        let bitrateIndex = Int(b2 >> 4), rateIndex = Int((b2 >> 2) & 0x3), padding = Int((b2 >> 1) & 0x1)
        guard version != 1, layer == 1, (1...14).contains(bitrateIndex), rateIndex != 3 else { return nil }
        let mpeg1 = version == 3
        let kbps = (mpeg1 ? mpeg1Bitrates : mpeg2Bitrates)[bitrateIndex]
        let rate = [44_100, 48_000, 32_000][rateIndex] >> (version == 3 ? 0 : version == 2 ? 1 : 2)
        // Samples per frame: 1,152 for MPEG-1, 576 for MPEG-2 and 2.5; a byte is 8 bits.
        let length = (mpeg1 ? 144 : 72) * kbps * 1_000 / rate + padding
        return length >= 4 ? length : nil
    }

    private static let mpeg1Bitrates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
    private static let mpeg2Bitrates = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
}
