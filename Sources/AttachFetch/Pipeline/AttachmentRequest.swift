/// One media URL to fetch.
public struct AttachmentRequest: Sendable, Equatable {
    /// Used exactly as given; it is echoed in the descriptor.
    public var url: String
    /// The caller's name for it; also the base of the saved file's name (after sanitising).
    /// Default: `attachment-<index>`.
    public var identifier: String?
    /// Part of the image that the thumbnail shows; default the whole image.
    public var clip: ClippingRectangle?

    public init(url: String, identifier: String? = nil, clip: ClippingRectangle? = nil) {
        self.url = url
        self.identifier = identifier
        self.clip = clip
    }
}

/// A rectangle in the unit square, origin top-left: the meaning of
/// `UNNotificationAttachmentOptionsThumbnailClippingRectKey`.
public struct ClippingRectangle: Sendable, Equatable, Codable {
    public let x: Double
    public let y: Double
    public let width: Double
    public let height: Double

    /// Throws unless the rectangle has a positive area and lies inside the unit square.
    public init(x: Double, y: Double, width: Double, height: Double) throws(AttachFetchError) {
        let values = [x, y, width, height]
        guard values.allSatisfy({ $0.isFinite }), x >= 0, y >= 0, width > 0, height > 0,
              x + width <= 1 + 1e-9, y + height <= 1 + 1e-9
        else {
            throw .invalidClip("clipping rectangle \(x),\(y),\(width),\(height) must have x, y >= 0, width, height > 0 and lie inside the unit square")
        }
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public static let whole = try! ClippingRectangle(x: 0, y: 0, width: 1, height: 1)
}
