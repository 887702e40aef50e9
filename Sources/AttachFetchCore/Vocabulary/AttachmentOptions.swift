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

    /// The part of a rectangle that lies in the unit square, for a caller's rectangle that may
    /// reach past an edge (a JSON Schema cannot state `y + height <= 1`, so a client that keeps
    /// to the schema can send one): `x` and `y` from 0 to under 1, `width` and `height` over 0
    /// and at most 1. Throws for anything else, which has no part in the square.
    public static func clipped(x: Double, y: Double, width: Double, height: Double) throws(AttachFetchError) -> ClippingRectangle {
        guard [x, y, width, height].allSatisfy({ $0.isFinite }), (0..<1).contains(x), (0..<1).contains(y),
              width > 0, height > 0, width <= 1, height <= 1 else {
            throw .invalidClip("clipping rectangle \(x),\(y),\(width),\(height) must have x and y from 0 to under 1 and width and height over 0 and at most 1; a part past the unit square's edge is cut off")
        }
        return try ClippingRectangle(x: x, y: y, width: min(width, 1 - x), height: min(height, 1 - y))
    }

    /// The whole image: the default clip.
    public static let whole = try! ClippingRectangle(x: 0, y: 0, width: 1, height: 1)
}

/// How a picture is cropped where a platform shows only part of it: Android's and web push's
/// 2:1 big picture, and the square iOS shows as an attachment's thumbnail.
public enum CropMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// Around what draws the eye: edges, skin tones and saturated colour (libvips' attention
    /// model). The default.
    case attention
    /// Around the most detail (libvips' entropy model).
    case entropy
    /// The middle.
    case centre
    /// Not cropped: the Android variant is made only when Android cannot show the image as it
    /// is, and no thumbnail rectangle is suggested.
    case none
}

/// A point in the unit square, origin top-left, that a crop centres on (within the image):
/// the subject, when the caller knows where it is.
public struct FocusPoint: Sendable, Hashable, Codable {
    /// From 0 (left) to 1 (right).
    public let x: Double
    /// From 0 (top) to 1 (bottom).
    public let y: Double

    /// Throws unless both coordinates are in the unit square.
    public init(x: Double, y: Double) throws(AttachFetchError) {
        guard x.isFinite, y.isFinite, (0...1).contains(x), (0...1).contains(y) else {
            throw .invalidClip("focus point \(x),\(y) must lie in the unit square (0 to 1 each)")
        }
        (self.x, self.y) = (x, y)
    }
}

/// What a crop is asked to do: the mode, and a focal point that wins over it when given.
public struct PictureCrop: Sendable, Hashable, Codable {
    /// The mode; `none` asks for no crop.
    public var mode: CropMode
    /// Where the crop centres, whatever the mode (but `none`).
    public var focus: FocusPoint?

    public init(mode: CropMode = .attention, focus: FocusPoint? = nil) {
        (self.mode, self.focus) = (mode, focus)
    }

    /// Whether anything is cropped.
    public var crops: Bool { mode != .none }

    /// Android's big picture and Chrome's notification image are shown at about 2:1 and
    /// centre-cropped by the system: an image whose width over height is below 1.5 or above
    /// 2.5 gets a 2:1 crop of its own, one between keeps its shape.
    public static func needsTwoToOne(width: Int, height: Int) -> Bool {
        guard width > 0, height > 0 else { return false }
        let aspect = Double(width) / Double(height)
        return aspect < 1.5 || aspect > 2.5
    }
}
