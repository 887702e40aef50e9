import AttachFetchCore

/// What FFmpeg learned about an audio or video file.
package struct MediaProbe: Sendable, Equatable, Codable {
    /// Seconds: the container's duration, or its streams' samples' when the two disagree
    /// (`MediaProber.sampleDuration`).
    package var duration: Double?
    /// The container header's duration when its streams' samples say otherwise.
    package var statedDuration: Double?
    package var videoCodec: String?
    package var audioCodec: String?
    /// The video's size as displayed (sample aspect ratio and rotation applied).
    package var width: Int?
    package var height: Int?

    package init(duration: Double? = nil, videoCodec: String? = nil, audioCodec: String? = nil, width: Int? = nil, height: Int? = nil) {
        self.duration = duration
        self.videoCodec = videoCodec
        self.audioCodec = audioCodec
        self.width = width
        self.height = height
    }
}

package struct ProbeOutcome: Sendable, Codable {
    package var probe: MediaProbe
    /// The type the streams show: an MPEG-4 file with no real video is audio (`.m4a`), an
    /// MPEG-4 file with video is video whatever its brand says.
    package var resolvedType: MediaType
    /// The poster-frame thumbnail, for video, with the frame's time.
    package var poster: ThumbnailOutcome?
    /// Set instead of a poster when the video is one iOS cannot play and converting is on.
    package var conversion: PlayableConversion?

    package init(probe: MediaProbe, resolvedType: MediaType, poster: ThumbnailOutcome? = nil, conversion: PlayableConversion? = nil) {
        self.probe = probe
        self.resolvedType = resolvedType
        self.poster = poster
        self.conversion = conversion
    }
}
