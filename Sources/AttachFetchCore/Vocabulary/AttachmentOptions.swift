/// UNNotificationAttachment options from a payload, encoded under Apple's option names so that
/// a service extension can pass them straight to `UNNotificationAttachment(identifier:url:options:)`.
public struct AttachmentOptions: Codable, Sendable, Equatable {
    /// `UNNotificationAttachmentOptionsThumbnailClippingRectKey`: a CGRect dictionary
    /// representation (`X`, `Y`, `Width`, `Height`) in the unit square.
    public var clippingRect: ClipRect?
    /// `UNNotificationAttachmentOptionsThumbnailTimeKey`: seconds into a video.
    public var thumbnailTime: Double?
    /// `UNNotificationAttachmentOptionsThumbnailHiddenKey`.
    public var thumbnailHidden: Bool?

    /// A clipping rectangle as a CGRect dictionary (`X`, `Y`, `Width`, `Height`), in the unit square.
    public struct ClipRect: Codable, Sendable, Equatable {
        /// Left edge (`X`).
        public var x: Double
        /// Top edge (`Y`).
        public var y: Double
        /// Width (`Width`).
        public var width: Double
        /// Height (`Height`).
        public var height: Double

        package init(x: Double, y: Double, width: Double, height: Double) {
            (self.x, self.y, self.width, self.height) = (x, y, width, height)
        }

        enum CodingKeys: String, CodingKey {
            case x = "X", y = "Y", width = "Width", height = "Height"
        }
    }

    enum CodingKeys: String, CodingKey {
        case clippingRect = "UNNotificationAttachmentOptionsThumbnailClippingRectKey"
        case thumbnailTime = "UNNotificationAttachmentOptionsThumbnailTimeKey"
        case thumbnailHidden = "UNNotificationAttachmentOptionsThumbnailHiddenKey"
    }

    /// Makes the options; every one is optional.
    public init(clippingRect: ClipRect? = nil, thumbnailTime: Double? = nil, thumbnailHidden: Bool? = nil) {
        self.clippingRect = clippingRect
        self.thumbnailTime = thumbnailTime
        self.thumbnailHidden = thumbnailHidden
    }

    package var isEmpty: Bool { clippingRect == nil && thumbnailTime == nil && thumbnailHidden == nil }
}

/// A rectangle in the unit square, origin top-left: the meaning of
/// `UNNotificationAttachmentOptionsThumbnailClippingRectKey`.
public struct ClippingRectangle: Sendable, Equatable, Codable {
    /// Left edge, from 0 to 1.
    public let x: Double
    /// Top edge, from 0 to 1.
    public let y: Double
    /// Width, greater than 0.
    public let width: Double
    /// Height, greater than 0.
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

    /// The whole image: the default clip.
    public static let whole = try! ClippingRectangle(x: 0, y: 0, width: 1, height: 1)
}
