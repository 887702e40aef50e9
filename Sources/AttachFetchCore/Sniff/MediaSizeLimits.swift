/// The largest body accepted per kind, in bytes: `AttachFetchConfiguration.SizeLimits` as the
/// pipeline passes it to the layers below it.
package struct MediaSizeLimits: Sendable, Equatable {
    /// Images, as delivered.
    package var image: Int64
    /// Audio.
    package var audio: Int64
    /// Video.
    package var video: Int64
    /// With normalizing on, an image may download up to this size and is then re-encoded to fit `image`.
    package var imageSource: Int64

    package init(image: Int64, audio: Int64, video: Int64, imageSource: Int64) {
        self.image = image
        self.audio = audio
        self.video = video
        self.imageSource = imageSource
    }

    /// The limit of a kind of media.
    package func limit(for kind: AttachmentDescriptor.Kind) -> Int64 {
        switch kind {
        case .image: return image
        case .audio: return audio
        case .video: return video
        }
    }

    /// A body longer than this is refused before its type is known.
    package var largest: Int64 { max(image, audio, video, imageSource) }
}
