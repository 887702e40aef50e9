/// Which bytes libmagic sees, so that a body's type never depends on how the network cut it
/// into chunks: always the first `size` bytes (fewer only when the body is shorter).
///
/// An ISO base media file (MPEG-4, 3GPP, QuickTime) whose brand libmagic does not know (it
/// says `application/octet-stream`, "ISO Media") is typed from its `ftyp` box instead: the
/// major brand, then each compatible brand, first known wins (`isoBrandMIME`). FFmpeg's probe
/// confirms it after the download, and the streams decide the kind.
///
/// Two things move the window, both MP3's: ID3v2 tags (cover art makes one tens or hundreds of
/// KB, and libmagic then sees only the tag; some files carry several in a row), and zero
/// padding before the first MPEG audio frame. The window is moved past them only when libmagic
/// then names MPEG audio (`audio/mpeg`), or a run of MPEG audio frames starts in it;
/// FFmpeg's probe confirms it after the download. Anything else keeps the answer for the
/// first bytes.
///
/// Where libmagic names nothing (`application/octet-stream`), the structure decides what the
/// decoders would: a PNG signature is a PNG (a chunk before `IHDR` throws libmagic, not
/// libpng), an `ftyp` box of unknown brands is ISO media for FFmpeg's probe to type, packets of
/// 188 (or 192) bytes each starting 0x47 are an MPEG transport stream, and a run of chained
/// MPEG audio layer III frame headers is MP3 (a capture that starts mid-frame, or a tag whose
/// declared size is off). Each is confirmed by a decoder after the download.
enum SniffWindow {
    /// Bytes libmagic sees.
    package static let size = 4_096

    enum Decision: Equatable {
        /// Not enough bytes yet: wait for more (or for the end of the body).
        case needMore
        /// libmagic's answer; `skipped` bytes of ID3v2 tag or padding came before its window.
        case sniffed(String, skipped: Int)
        /// The bytes cannot be typed: the code and why.
        case refused(ReasonCode, String)
    }

    /// - Parameters:
    ///   - prefix: the body's first bytes, as many as have arrived.
    ///   - complete: true when `prefix` is the whole body.
    ///   - maxLookahead: how far the window may move (it is buffered in memory until then); a
    ///     tag declared larger is refused. The pipeline passes the audio limit: a tag larger
    ///     than it cannot belong to a deliverable MP3.
    package static func decide(_ prefix: UnsafeRawBufferPointer, complete: Bool, maxLookahead: Int,
                       sniffer: MagicSniffer) -> Decision {
        guard prefix.count >= size || complete else { return .needMore }
        let first: String
        switch sniffer.mimeType(of: UnsafeRawBufferPointer(rebasing: prefix.prefix(size))) {
        case .success(let mime): first = mime
        case .failure(let error): return .refused(.unsupportedType, error.message)
        }
        let unnamed = first == "application/octet-stream"
        if unnamed, let structured = structureMIME(UnsafeRawBufferPointer(rebasing: prefix.prefix(size))) {
            return .sniffed(structured, skipped: 0)
        }
        var start = 0
        // ID3v2 tags, one after another, each within the lookahead.
        while start + 10 <= prefix.count, let tag = id3v2TagSize(UnsafeRawBufferPointer(rebasing: prefix[start...])) {
            guard start + tag <= maxLookahead else {
                return .refused(.sizeLimitExceeded,
                                "the ID3v2 tag declares \(start + tag) bytes, over the audio limit of \(maxLookahead) bytes")
            }
            start += tag
            if start + 10 > prefix.count && !complete { return .needMore }
        }
        guard start > 0 || unnamed else { return .sniffed(first, skipped: 0) }
        // Past the tags, zero padding may come before the first frame.
        var frames = start
        while frames < prefix.count && frames < maxLookahead && prefix[frames] == 0 { frames += 1 }
        let end = min(frames + size, maxLookahead)
        if prefix.count < end && !complete { return .needMore }
        guard frames < min(prefix.count, end) else { return .sniffed(first, skipped: 0) }
        let window = UnsafeRawBufferPointer(rebasing: prefix[frames..<min(prefix.count, end)])
        // (A window at 0 is the one libmagic has already named.)
        if frames > 0, case .success(let mime) = sniffer.mimeType(of: window), mime == "audio/mpeg" {
            return .sniffed(mime, skipped: frames)
        }
        if let run = MPEGAudioFrames.firstRun(in: window, complete: complete && end >= prefix.count) {
            return .sniffed("audio/mpeg", skipped: frames + run)
        }
        return .sniffed(first, skipped: 0)
    }

    /// What the structure of a window libmagic names nothing says, or nil.
    static func structureMIME(_ bytes: UnsafeRawBufferPointer) -> String? {
        if bytes.starts(with: PNGChunkCheck.signature) { return "image/png" }
        if let branded = isoBrandMIME(bytes) { return branded }
        if isoBoxes(bytes) { return "video/mp4" }
        if transportStreamPacketSize(bytes) != nil { return "video/mp2t" }
        return nil
    }

    /// True when the window starts with a whole, well-formed `ftyp` box, whatever its brands:
    /// ISO base media, for FFmpeg's probe to type by its streams.
    static func isoBoxes(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 16, bytes[4...7].elementsEqual("ftyp".utf8) else { return false }
        let box = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        guard box >= 16, box <= bytes.count, (box - 16) % 4 == 0 else { return false }
        // The next box's header must look like one: a size that is 0 (to the end), 1 (64-bit)
        // or at least 8, and a type of four printable characters.
        guard box + 8 <= bytes.count else { return true }
        let next = Int(bytes[box]) << 24 | Int(bytes[box + 1]) << 16 | Int(bytes[box + 2]) << 8 | Int(bytes[box + 3])
        return (next == 0 || next == 1 || next >= 8) && bytes[(box + 4)..<(box + 8)].allSatisfy { (0x20...0x7E).contains($0) }
    }

    /// 188 (MPEG-TS) or 192 (M2TS: a 4-byte timestamp first) when every packet in the window
    /// starts with the sync byte 0x47, at least five of them; nil otherwise.
    static func transportStreamPacketSize(_ bytes: UnsafeRawBufferPointer) -> Int? {
        for (packet, offset) in [(188, 0), (192, 4)] {
            let starts = Array(stride(from: offset, to: bytes.count, by: packet))
            if starts.count >= 5, starts.allSatisfy({ bytes[$0] == 0x47 }) { return packet }
        }
        return nil
    }

    /// The MIME type an ISO base media file's brands name, or nil: the window must start with
    /// a whole `ftyp` box (a 32-bit size of 16 or more that fits, a multiple of 4 after the
    /// major brand and its version), and a brand must be one of MPEG-4's, 3GPP's, 3GPP2's or
    /// QuickTime's.
    static func isoBrandMIME(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.count >= 16, bytes[4...7].elementsEqual("ftyp".utf8) else { return nil }
        let box = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        guard box >= 16, box <= bytes.count, (box - 16) % 4 == 0 else { return nil }
        let brands = [8] + Array(stride(from: 16, to: box, by: 4))
        for offset in brands {
            let brand = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            if let mime = brandMIME(brand) { return mime }
        }
        return nil
    }

    /// Brands from the registered list (mp4ra.org): 3GPP's start "3gp", "3gs", "3ge", "3gg",
    /// "3gr", "3gt"; 3GPP2's "3g2"; QuickTime is "qt  "; the rest are MPEG-4's.
    private static func brandMIME(_ brand: String) -> String? {
        if ["3gp", "3gs", "3ge", "3gg", "3gr", "3gt"].contains(where: brand.hasPrefix) { return "video/3gpp" }
        if brand.hasPrefix("3g2") { return "video/3gpp2" }
        switch brand {
        case "qt  ": return "video/quicktime"
        case "M4A ", "M4B ": return "audio/mp4"
        case "isom", "iso2", "iso3", "iso4", "iso5", "iso6", "iso7", "iso8", "iso9", "mp41", "mp42", "avc1",
             "dash", "M4V ", "M4VH", "M4VP", "mp71", "MSNV", "F4V ": return "video/mp4"
        default: return nil
        }
    }

    /// The size of an ID3v2 tag at the start, header and footer included: "ID3", a version of
    /// 2 to 4, flags, and a 28-bit "syncsafe" size (7 bits a byte, high bits clear).
    static func id3v2TagSize(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 10, bytes[0] == 0x49, bytes[1] == 0x44, bytes[2] == 0x33,
              (2...4).contains(bytes[3]), bytes[4] != 0xFF,
              bytes[6] < 0x80, bytes[7] < 0x80, bytes[8] < 0x80, bytes[9] < 0x80 else { return nil }
        let body = Int(bytes[6]) << 21 | Int(bytes[7]) << 14 | Int(bytes[8]) << 7 | Int(bytes[9])
        let footer = bytes[3] == 4 && bytes[5] & 0x10 != 0 ? 10 : 0
        return 10 + body + footer
    }
}
