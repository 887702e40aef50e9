/// The largest body accepted per kind, in bytes. The pipeline's configuration names it
/// `AttachFetchConfiguration.SizeLimits`; the layers below take it as it is.
public struct MediaSizeLimits: Sendable, Equatable {
    /// Images, as delivered. Default 10 MiB.
    public var image: Int64 = 10_485_760
    /// Audio. Default 5 MiB.
    public var audio: Int64 = 5_242_880
    /// Video. Default 50 MiB.
    public var video: Int64 = 52_428_800
    /// With normalizing on, an image may download up to this size and is then re-encoded and
    /// downscaled to fit `image`. Default 40 MiB.
    public var imageSource: Int64 = 41_943_040

    /// Makes the limits; each default is the documented one.
    public init(image: Int64 = 10_485_760, audio: Int64 = 5_242_880, video: Int64 = 52_428_800,
                imageSource: Int64 = 41_943_040) {
        self.image = image
        self.audio = audio
        self.video = video
        self.imageSource = imageSource
    }

    /// The limit of a kind of media.
    public func limit(for kind: AttachmentDescriptor.Kind) -> Int64 {
        switch kind {
        case .image: return image
        case .audio: return audio
        case .video: return video
        }
    }

    /// A body longer than this is refused before its type is known.
    public var largest: Int64 { max(image, audio, video, imageSource) }
}
