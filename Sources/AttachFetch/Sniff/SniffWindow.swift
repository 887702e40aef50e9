/// Which bytes libmagic sees, so that a body's type never depends on how the network cut it
/// into chunks: always the first `size` bytes (fewer only when the body is shorter).
///
/// Two things move the window, both MP3's: an ID3v2 tag (cover art makes it tens or hundreds of
/// KB, and libmagic then sees only the tag), and zero padding before the first MPEG audio frame.
/// The window is moved past them only when libmagic then names MPEG audio (`audio/mpeg`);
/// FFmpeg's probe confirms it after the download. Anything else keeps the answer for the
/// first bytes.
enum SniffWindow {
    /// Bytes libmagic sees.
    static let size = 4_096

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
    static func decide(_ prefix: UnsafeRawBufferPointer, complete: Bool, maxLookahead: Int,
                       sniffer: MagicSniffer) -> Decision {
        guard prefix.count >= size || complete else { return .needMore }
        let first: String
        switch sniffer.mimeType(of: UnsafeRawBufferPointer(rebasing: prefix.prefix(size))) {
        case .success(let mime): first = mime
        case .failure(let error): return .refused(.unsupportedType, error.message)
        }
        let start: Int
        if let tag = id3v2TagSize(prefix) {
            guard tag <= maxLookahead else {
                return .refused(.sizeLimitExceeded,
                                "the ID3v2 tag declares \(tag) bytes, over the audio limit of \(maxLookahead) bytes")
            }
            start = tag
        } else if prefix.first == 0 && first == "application/octet-stream" {
            start = 0
        } else {
            return .sniffed(first, skipped: 0)
        }
        // Past the tag, zero padding may come before the first frame.
        var frames = start
        while frames < prefix.count && frames < maxLookahead && prefix[frames] == 0 { frames += 1 }
        let end = min(frames + size, maxLookahead)
        if prefix.count < end && !complete { return .needMore }
        guard frames < min(prefix.count, end) else { return .sniffed(first, skipped: 0) }
        let window = UnsafeRawBufferPointer(rebasing: prefix[frames..<min(prefix.count, end)])
        guard case .success(let mime) = sniffer.mimeType(of: window), mime == "audio/mpeg" else {
            return .sniffed(first, skipped: 0)
        }
        return .sniffed(mime, skipped: frames)
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
