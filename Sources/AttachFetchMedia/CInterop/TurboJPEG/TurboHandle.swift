internal import CTurboJPEG

/// One TurboJPEG instance. Not thread-safe (not Sendable): made and used by one call.
final class TurboHandle {
    package let handle: tjhandle

    init(compress: Bool) throws(Reason) {
        guard let handle = compress ? tjInitCompress() : tjInitDecompress() else {
            throw Reason(code: .ioError, message: "libjpeg-turbo cannot start: \(String(cString: tjGetErrorStr2(nil)))")
        }
        self.handle = handle
    }

    private init(handle: tjhandle) { self.handle = handle }

    deinit { tjDestroy(handle) }

    /// `jpeg` turned as EXIF `orientation` (1-8) says, losslessly (its DCT blocks moved, or for
    /// 1 copied, never decoded and encoded again), with no marker copied but `keeping` (whole
    /// segments of the source, its ICC profile's), put after the JFIF header: no EXIF tag left
    /// to turn it twice. Nil where the turn would move a partial MCU block (an edge that is not
    /// a multiple of the block size: `TJXOPT_PERFECT`), for colour other than YCbCr or grey
    /// (CMYK and RGB JPEGs need converting for a platform that shows sRGB), or where
    /// libjpeg-turbo refuses the file.
    static func turned(_ jpeg: [UInt8], orientation: Int, keeping: [ArraySlice<UInt8>] = []) -> [UInt8]? {
        let operations: [Int: TJXOP] = [1: TJXOP_NONE, 2: TJXOP_HFLIP, 3: TJXOP_ROT180, 4: TJXOP_VFLIP, 5: TJXOP_TRANSPOSE,
                                        6: TJXOP_ROT90, 7: TJXOP_TRANSVERSE, 8: TJXOP_ROT270]
        guard let operation = operations[orientation], let made = tjInitTransform() else { return nil }
        let owner = TurboHandle(handle: made)
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colourspace: Int32 = 0
        guard tjDecompressHeader3(owner.handle, jpeg, UInt(jpeg.count), &width, &height, &subsampling, &colourspace) == 0,
              [Int32(TJCS_YCbCr.rawValue), Int32(TJCS_GRAY.rawValue)].contains(colourspace) else { return nil }
        var transform = tjtransform()
        transform.op = Int32(operation.rawValue)
        transform.options = TJXOPT_PERFECT | TJXOPT_COPYNONE
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let status = tjTransform(owner.handle, jpeg, UInt(jpeg.count), 1, &output, &size, &transform, 0)
        defer { if let output { tjFree(output) } }
        guard status == 0, let output, size > 4 else { return nil }
        let bytes = UnsafeBufferPointer(start: output, count: Int(size))
        guard !keeping.isEmpty else { return Array(bytes) }
        // SOI, then the JFIF segment libjpeg-turbo writes (APP0 must come first), then the kept ones.
        var split = 2
        if bytes[2] == 0xFF, bytes[3] == 0xE0, size > 6 { split = 4 + (Int(bytes[4]) << 8 | Int(bytes[5])) }
        guard split <= bytes.count else { return nil }
        return Array(bytes[..<split]) + keeping.flatMap { $0 } + Array(bytes[split...])
    }

    /// The one mapping of a libjpeg-turbo failure: its message for the last failure on this
    /// handle. The code is the caller's: a decode fails on the media, an encode on the machine.
    package func failure(_ code: ReasonCode, _ doing: String) -> Reason {
        Reason(code: code, message: "libjpeg-turbo cannot \(doing): \(String(cString: tjGetErrorStr2(handle)))")
    }
}
