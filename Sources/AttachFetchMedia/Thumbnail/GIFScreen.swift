#if canImport(Glibc)
import Glibc
#endif

/// A GIF's logical screen, from its header: the canvas every frame is drawn on, which a
/// decoder (FFmpeg's, a browser's) allocates whole. libvips reports the frames' size, so a
/// header that claims a 65535x65535 screen around 320x240 frames would pass its checks while
/// other decoders refuse or allocate 4 G pixels: the screen is checked against the same budget.
enum GIFScreen {
    /// The screen's width and height, when `source` is a GIF; nil otherwise.
    static func size(_ source: String) -> (width: Int, height: Int)? {
        let fd = open(source, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 10)
        guard header.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, 10, 0) }) == 10,
              header[0..<6].elementsEqual("GIF87a".utf8) || header[0..<6].elementsEqual("GIF89a".utf8) else { return nil }
        // Little-endian 16-bit width and height after the signature.
        return (Int(header[6]) | Int(header[7]) << 8, Int(header[8]) | Int(header[9]) << 8)
    }
}
