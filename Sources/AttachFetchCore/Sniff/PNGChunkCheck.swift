#if canImport(Glibc)
import Glibc
#endif

/// Walks a PNG's metadata chunk headers before any decoder sees the file.
///
/// libpng allocates what a chunk *declares* before reading it: libpng's own "crashers" test
/// files are 57-byte PNGs whose tEXt, zTXt, iTXt, sPLT, pCAL or sCAL chunk declares a gigabyte,
/// and each took the process past 1 GB resident before it was rejected. Here a chunk must fit
/// in the bytes the file really has, and ancillary (metadata) chunks are capped, so a few
/// hundred bytes can never cost more than these caps.
package enum PNGChunkCheck {
    /// Largest single ancillary chunk accepted (large ICC profiles are a few hundred KB).
    static let maxAncillaryChunk = 8 << 20
    /// Largest total of all ancillary chunks.
    static let maxAncillaryTotal = 16 << 20

    package static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Throws `corruptMedia` for a PNG whose metadata chunks do not fit the file or the caps;
    /// files that are not PNGs pass untouched.
    package static func check(_ path: String) throws(Reason) {
        // A working path (`UnnamedFile`, with its extension) opens through /proc as a new
        // descriptor of its own: pread below leaves the shared offset alone either way.
        let fd = open(UnnamedFile.openable(path), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Reason(code: .ioError, message: "cannot open the image: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Reason(code: .ioError, message: "cannot stat the image") }
        let size = Int(info.st_size)
        var header = [UInt8](repeating: 0, count: 8)
        guard pread(fd, &header, 8, 0) == 8, header == signature else { return }

        var offset = 8
        var ancillaryTotal = 0
        while true {
            // A file that ends on a chunk boundary is the decoder's to judge (it reports a
            // missing image or IEND itself); only declared sizes are checked here.
            guard offset + 8 <= size else { return }
            guard pread(fd, &header, 8, off_t(offset)) == 8 else {
                throw Reason(code: .ioError, message: "cannot read the image")
            }
            let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
            let name = String(decoding: header[4..<8].map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
            // 4 bytes of CRC follow the data.
            let remaining = size - offset - 12
            // Bit 5 of the first letter: lower case is ancillary (metadata), upper case critical.
            // Critical chunks are libpng's to judge: it streams image data (IDAT) rather than
            // allocating it, and a last IDAT cut short may still hold the whole image.
            guard header[4] & 0x20 != 0 else {
                if name == "IEND" || length > remaining { return }
                offset += 12 + length
                continue
            }
            guard length <= remaining else {
                throw Reason(code: .corruptMedia,
                                   message: "the PNG's \(name) chunk declares \(length) bytes but only \(max(0, remaining)) follow")
            }
            ancillaryTotal += length
            guard length <= maxAncillaryChunk, ancillaryTotal <= maxAncillaryTotal else {
                throw Reason(code: .corruptMedia,
                                   message: "the PNG's \(name) metadata chunk of \(length) bytes is over the limit of \(maxAncillaryChunk) (\(maxAncillaryTotal) in all)")
            }
            offset += 12 + length
        }
    }
}
