/// What FFmpeg learned about an audio or video file.
struct MediaProbe: Sendable, Equatable, Codable {
    /// Seconds, when the container states a duration.
    var duration: Double?
    var videoCodec: String?
    var audioCodec: String?
    /// The video's size as displayed (sample aspect ratio and rotation applied).
    var width: Int?
    var height: Int?
}

struct ProbeOutcome: Sendable, Codable {
    var probe: MediaProbe
    /// The type the streams show: an MPEG-4 file with no real video is audio (`.m4a`), an
    /// MPEG-4 file with video is video whatever its brand says.
    var resolvedType: MediaType
    /// The poster-frame thumbnail, for video, with the frame's time.
    var poster: ThumbnailOutcome?
    /// Set instead of a poster when the video is one iOS cannot play and converting is on.
    var conversion: PlayableMedia.Conversion?
}
