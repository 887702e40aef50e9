/// One media URL to fetch.
public struct AttachmentRequest: Sendable, Equatable {
    /// Used exactly as given; it is echoed in the descriptor.
    public var url: String
    /// The caller's name for it; also the base of the saved file's name (after sanitizing).
    /// Default: `attachment-<index>`.
    public var identifier: String?
    /// Part of the image that the thumbnail shows; default the whole image.
    public var clip: ClippingRectangle?

    /// An avatar must be an image and gets a square center-cropped thumbnail.
    public var role: AttachmentDescriptor.Role?
    /// A shorter request timeout for this one (clipped like the others).
    public var timeout: Duration?
    /// Passed through to the descriptor.
    public var options: AttachmentOptions?
    /// Passed through to the descriptor.
    public var payloadPath: String?
    /// The platforms this media must show on; nil: the pipeline's `platforms`.
    public var platforms: Set<Platform>?
    /// Whether what is published for it is encrypted; nil: the pipeline's
    /// `mediaEncryption.encryptsEverything` (false without `mediaEncryption`). True without
    /// `mediaEncryption` fails the attachment with `encryptionUnavailable`.
    public var encrypt: Bool?
    /// This attachment's own transcoding (on or off, the video's long edge); nil: the
    /// pipeline's (`AttachFetchConfiguration.transcode`, `transcodeMaxLongEdge`). Results made
    /// under other settings are not shared with it.
    public var transcoding: TranscodeSettings?
    /// How the Android variant is cut to 2:1 and the square iOS shows as the
    /// thumbnail is chosen; nil: `attention`. A `clip` still decides the iOS thumbnail.
    public var crop: CropMode?
    /// Where the crops centre (the subject), in the unit square; ignored with `crop: .none`.
    public var focus: FocusPoint?

    /// The crop this request asks for; nil when it asks for none. Avatars are never cropped.
    package var pictureCrop: PictureCrop? {
        guard role != .avatar, (crop ?? .attention) != .none else { return nil }
        return PictureCrop(mode: crop ?? .attention, focus: focus)
    }

    /// Makes a request; only `url` is required.
    public init(url: String, identifier: String? = nil, clip: ClippingRectangle? = nil,
                role: AttachmentDescriptor.Role? = nil, timeout: Duration? = nil,
                options: AttachmentOptions? = nil, payloadPath: String? = nil, platforms: Set<Platform>? = nil) {
        self.platforms = platforms
        self.url = url
        self.identifier = identifier
        self.clip = clip
        self.role = role
        self.timeout = timeout
        self.options = options
        self.payloadPath = payloadPath
    }
}
