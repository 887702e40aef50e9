extension MediaTranscoder {
    /// A frame's area against `maxImagePixels`: `pixelLimitExceeded` past it.
    static func checkArea(width: Int, height: Int, limits: TranscodeLimits) throws(Reason) {
        let pixels = HEIFImageSize.area(width, height)
        guard pixels <= limits.maxPixels else {
            throw Reason(code: .pixelLimitExceeded, message: "video frames of \(width)x\(height) (\(pixels) pixels) are over the limit of \(limits.maxPixels)")
        }
    }
}
