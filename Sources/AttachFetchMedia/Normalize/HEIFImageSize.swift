#if canImport(Glibc)
import Glibc
#endif

/// The image sizes a HEIF or AVIF file declares (its `ispe` item properties), read from the
/// box structure before libheif sees the file. libheif refuses images over its own security
/// limit with an error that reads like damage; checked here first, an image too large for the
/// pixel budget gets `pixelLimitExceeded`, as every other format does.
enum HEIFImageSize {
    /// How much of the file's start is read: the `meta` box comes first in every HEIF writer's
    /// output and is small.
    static let maxHeaderBytes = 1 << 20

    /// The largest declared width x height, or nil when the file is not ISO-BMFF or declares none.
    package static func largest(_ path: String) -> (width: Int, height: Int)? {
        guard let data = header(path) else { return nil }
        var best: (width: Int, height: Int)?
        for ispe in properties(data, named: "ispe") where ispe.count >= 12 {
            // Each side is 32 bits: the product is compared without overflowing.
            let width = integer(data, at: ispe.lowerBound + 4), height = integer(data, at: ispe.lowerBound + 8)
            if area(width, height) > (best.map { area($0.width, $0.height) } ?? -1) { best = (width, height) }
        }
        return best
    }

    /// The file's first `maxHeaderBytes`, when it is ISO-BMFF (an `ftyp` box first).
    static func header(_ path: String) -> ArraySlice<UInt8>? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // The box type first: most images are not ISO-BMFF, and need no megabyte read.
        var start = [UInt8](repeating: 0, count: 16)
        guard pread(fd, &start, start.count, 0) == start.count, start[4...7].elementsEqual("ftyp".utf8) else { return nil }
        var bytes = [UInt8](repeating: 0, count: maxHeaderBytes)
        let count = pread(fd, &bytes, bytes.count, 0)
        guard count >= 16 else { return nil }
        return bytes[..<count]
    }

    /// The payloads of the item properties called `name`: meta (a full box: 4 bytes of version
    /// and flags) > iprp > ipco > `name`.
    static func properties(_ data: ArraySlice<UInt8>, named name: String) -> [Range<Int>] {
        var found: [Range<Int>] = []
        for meta in boxes(data, in: data.startIndex..<data.endIndex, named: "meta") {
            for iprp in boxes(data, in: (meta.lowerBound + 4)..<meta.upperBound, named: "iprp") {
                for ipco in boxes(data, in: iprp, named: "ipco") { found += boxes(data, in: ipco, named: name) }
            }
        }
        return found
    }

    /// The payloads of the boxes called `name` directly inside `range`.
    private static func boxes(_ data: ArraySlice<UInt8>, in range: Range<Int>, named name: String) -> [Range<Int>] {
        var found: [Range<Int>] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            var size = integer(data, at: offset)
            var header = 8
            if size == 1 {
                guard offset + 16 <= range.upperBound else { break }
                size = integer(data, at: offset + 8) << 32 | integer(data, at: offset + 12)
                header = 16
            } else if size == 0 {
                size = range.upperBound - offset
            }
            // A declared size runs to 2^64: compared with what is left, never added to the offset first.
            guard size >= header, size <= range.upperBound - offset else { break }
            if data[(offset + 4)..<(offset + 8)].elementsEqual(name.utf8) { found.append((offset + header)..<(offset + size)) }
            offset += size
        }
        return found
    }

    /// Width x height, saturating at Int.max.
    static func area(_ width: Int, _ height: Int) -> Int {
        let (product, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow ? Int.max : product
    }

    static func integer(_ data: ArraySlice<UInt8>, at offset: Int) -> Int {
        Int(data[offset]) << 24 | Int(data[offset + 1]) << 16 | Int(data[offset + 2]) << 8 | Int(data[offset + 3])
    }
}
