import AttachFetchCore

// The settings a decode job carries to the decoders (AttachFetchMedia's `Thumbnailer`,
// `ImageNormalizer`, `MediaProber` and `MediaTranscoder`) and what their answers return: here,
// so that the pipeline's side builds jobs and reads answers without linking a decoder.

/// Which part of the image a thumbnail shows (`Thumbnailer`).
package enum ThumbnailShape: Sendable, Equatable {
    /// A clipping rectangle in the unit square.
    case clip(ClippingRectangle)
    /// The largest centered square (avatars).
    case squareCenter
}

/// A thumbnail's decode budgets, from the configuration (`Thumbnailer`).
package struct ThumbnailLimits: Sendable, Codable {
    package var maxEdge: Int
    package var maxPixels: Int
    package var maxProgressivePixels: Int
    package var maxAnimationFrames: Int
    package var maxAnimationPixels: Int
    /// Set: with the thumbnail of the whole image, the square a thumbnail of it should show
    /// by this crop (`ThumbnailOutcome.suggestedClip`).
    package var suggestClip: PictureCrop? = nil

    package init(maxEdge: Int, maxPixels: Int, maxProgressivePixels: Int, maxAnimationFrames: Int, maxAnimationPixels: Int) {
        self.maxEdge = maxEdge
        self.maxPixels = maxPixels
        self.maxProgressivePixels = maxProgressivePixels
        self.maxAnimationFrames = maxAnimationFrames
        self.maxAnimationPixels = maxAnimationPixels
    }
}

/// What `ImageNormalizer` may make of an image iOS would not show, from the configuration.
package struct NormalizeLimits: Sendable, Codable {
    /// The delivered file must not be larger than this (the image limit).
    package var maxBytes: Int64
    /// Encodings tried at most before giving up with `sizeLimitExceeded`.
    package var maxAttempts: Int
    package var decode: ThumbnailLimits
    /// An animation may stay one (iOS plays GIFs); off, its first frame becomes a still.
    package var keepsAnimation = true
    /// Set (transcoding on): an animation that does not fit as a GIF becomes a video within
    /// these limits, instead of a still (`normalize` answers nil for it).
    package var animationAsVideo: TranscodeLimits? = nil
    /// Set: an image whose shape is not about 2:1 (`PictureCrop.needsTwoToOne`) becomes a
    /// 2:1 crop of it by this crop, at most `cropWidth` wide, a JPEG (`Transform.cropped`).
    package var crop: PictureCrop? = nil
    /// The widest a 2:1 crop is made.
    package var cropWidth = 1024
    /// On: the pixels are converted to sRGB and written without a profile (a variant for a
    /// platform that does not manage colour); off: the source's ICC profile is kept with
    /// the source's values (a 2:1 crop is always sRGB: it is only ever a variant).
    package var convertsToSRGB = false
    /// On: a JPEG its EXIF orientation turns, which needs nothing else (no crop, no profile
    /// to convert, within `maxBytes`), is turned losslessly instead of encoded again, and
    /// keeps no tag (a variant for a platform that ignores the tag; a file whose EXIF blocks
    /// disagree, whose blocks are copied if upright). Its ICC profile stays unless
    /// `convertsToSRGB`, with which a JPEG that has one is converted instead.
    package var turnsLosslessly = false

    package init(maxBytes: Int64, maxAttempts: Int, decode: ThumbnailLimits, keepsAnimation: Bool = true,
                 animationAsVideo: TranscodeLimits? = nil) {
        (self.maxBytes, self.maxAttempts, self.decode) = (maxBytes, maxAttempts, decode)
        (self.keepsAnimation, self.animationAsVideo) = (keepsAnimation, animationAsVideo)
    }
}

/// A probe's decode budgets, from the configuration (`MediaProber`).
package struct ProbeLimits: Sendable, Codable {
    /// Frames decoded at most to reach the thumbnail time (after seeking to the keyframe
    /// before it); past that, the last frame decoded is the poster.
    package var maxDecodedFrames: Int
    /// Packets read at most, in all.
    package var maxPackets: Int
    package var thumbnail: ThumbnailLimits
    /// Converting is on: HEVC tagged `hev1` is answered with the re-tagging it needs
    /// (``ProbeOutcome/conversion``), not refused.
    package var convertsUnplayable = false
    /// Transcoding is on too: so is video that must be re-encoded.
    package var transcodesUnplayable = false

    package init(maxDecodedFrames: Int, maxPackets: Int, thumbnail: ThumbnailLimits,
                 convertsUnplayable: Bool = false, transcodesUnplayable: Bool = false) {
        (self.maxDecodedFrames, self.maxPackets, self.thumbnail) = (maxDecodedFrames, maxPackets, thumbnail)
        (self.convertsUnplayable, self.transcodesUnplayable) = (convertsUnplayable, transcodesUnplayable)
    }
}

/// What `MediaTranscoder` may make, from the configuration and the deadline.
package struct TranscodeLimits: Sendable, Codable {
    /// The delivered file's most bytes (its kind's limit).
    package var maxBytes: Int64
    /// The most bytes when a video container turns out to hold sound alone (WMA in ASF, a
    /// Flash file without video): the result is audio, under the audio limit. Nil: `maxBytes`.
    package var audioOnlyMaxBytes: Int64? = nil
    /// The video's longest edge at most, in pixels.
    package var maxLongEdge: Int = 1280
    /// The most pixels a source frame may have (`maxImagePixels`), checked on the stream's
    /// header before decoding and on every decoded frame.
    package var maxPixels: Int = 50_000_000
    /// When reading stops and what was encoded is finished as a clip: `CLOCK_MONOTONIC`
    /// nanoseconds, the same clock in every process (`TranscodeBudget`). Nil: no budget.
    package var stopAt: UInt64? = nil

    package init(maxBytes: Int64, maxLongEdge: Int = 1280, maxPixels: Int = 50_000_000, stopAt: UInt64? = nil) {
        (self.maxBytes, self.maxLongEdge, self.maxPixels, self.stopAt) = (maxBytes, maxLongEdge, maxPixels, stopAt)
    }
}

/// A remux's way out: transcode `type` within `limits` when a stream cannot be copied.
package struct TranscodeFallback: Sendable, Codable {
    package var type: MediaType
    package var limits: TranscodeLimits

    package init(type: MediaType, limits: TranscodeLimits) { (self.type, self.limits) = (type, limits) }
}

/// What makes a video iOS cannot play into one it plays (`PlayableMedia`).
package enum PlayableConversion: Codable, Sendable, Equatable {
    /// HEVC tagged `hev1`: moved into MPEG-4 tagged `hvc1`, not re-encoded.
    case retag
    /// Re-encoded for its video; the associated text names it ("H.264 High 10", "AV1").
    case transcode(String)
    /// Re-encoded for its sound ("Opus", "PCM" in MPEG-4).
    case transcodeAudio(String)
}

/// What a transcode made: the delivered file's facts, and what it was made from.
package struct TranscodedMedia: Sendable, Codable {
    package var file: String
    package var type: MediaType
    package var bytes: Int64
    package var sha256: String
    /// The source's codecs, as people name them ("Opus", "VP9").
    package var sourceAudioCodec: String?
    package var sourceVideoCodec: String?
    /// Seconds delivered.
    package var duration: Double
    /// Cut short to fit the size limit or the time budget: the first `duration` seconds.
    package var trimmed: Bool
    /// Cut short because the time budget (`TranscodeLimits.stopAt`) ran out, not the size limit.
    package var outOfTime = false
    /// False when the frames were copied, not re-encoded (an MP3 cut to fit).
    package var reencoded = true
    /// The source video's coded size (nil for sound alone).
    package var sourceWidth: Int?
    package var sourceHeight: Int?
    /// libx264's preset the speed ladder chose (nil for sound alone).
    package var preset: String?
    /// What the source's decoders reported when some of it did not decode; nil when all did.
    package var damage: String?
    /// Frames a faster rung of the speed ladder was given from the measured one's, not decoded
    /// again (`SpeedLadder.Replay`); 0 when the first rung made the file.
    package var replayedFrames = 0

    package init(file: String, type: MediaType, bytes: Int64, sha256: String, sourceAudioCodec: String?, sourceVideoCodec: String?, duration: Double, trimmed: Bool, outOfTime: Bool = false, sourceWidth: Int? = nil, sourceHeight: Int? = nil, preset: String? = nil) {
        self.file = file
        self.type = type
        self.bytes = bytes
        self.sha256 = sha256
        self.sourceAudioCodec = sourceAudioCodec
        self.sourceVideoCodec = sourceVideoCodec
        self.duration = duration
        self.trimmed = trimmed
        self.outOfTime = outOfTime
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.preset = preset
    }
}

