#if canImport(Glibc)
import Glibc
#endif

/// Whether an AVIF file is an image sequence: its `ftyp` box's major brand is `avis`, as
/// libavif and FFmpeg write an animated AVIF. libheif reads no sequence (it reads the primary
/// still image, when the file has one); FFmpeg's MPEG-4 demuxer and libdav1d read every frame.
enum AVIFSequence {
    static func isSequence(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 12)
        guard pread(fd, &bytes, bytes.count, 0) == bytes.count else { return false }
        return bytes[4..<8].elementsEqual("ftyp".utf8) && bytes[8..<12].elementsEqual("avis".utf8)
    }
}
