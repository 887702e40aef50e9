/// The one decision every path makes once the bytes are typed: is this type in the table, may
/// this request have it, and does its size fit the kind's limit. Applied by `BodyAdmission`, for
/// downloads (with the declared Content-Length) and `LocalMediaInspector` (with the file's size).
package enum MediaPolicy {
    /// - Parameters:
    ///   - sniffed: libmagic's MIME type for the bytes.
    ///   - size: the size known so far, and what it is ("Content-Length", "the file's size").
    ///   - normalize: when true, convertible images are admitted and images may be as large as
    ///     the source limit (they are fitted after the download).
    package static func admit(sniffed: String, size: (value: Int64, source: String)?,
                      limits: MediaSizeLimits,
                      imagesOnly: Bool, normalize: Bool, transcode: Bool = true) -> Result<MediaType, Reason> {
        let convertible = MediaType.convertibleForSniffedMIME(sniffed).flatMap { !needsTranscode($0) || transcode ? $0 : nil }
        guard let type = MediaType.forSniffedMIME(sniffed) ?? (normalize ? convertible : nil) else {
            let why = MediaType.convertibleForSniffedMIME(sniffed).map { needsTranscode($0) && normalize
                ? " (transcoding it is turned off)" : " (converting it is turned off)" } ?? ""
            return .failure(Reason(code: .unsupportedType,
                                  message: "the bytes are \(sniffed), which is not an attachment type iOS accepts\(why)"))
        }
        if imagesOnly && type.kind != .image {
            return .failure(Reason(code: .unsupportedType, message: "the bytes are \(sniffed), but an avatar must be an image"))
        }
        let limit = streamingLimit(for: type, limits: limits, normalize: normalize)
        if let size, size.value > limit {
            return .failure(Reason(code: .sizeLimitExceeded,
                                  message: "\(size.source) \(size.value) exceeds the \(limitName(type, normalize: normalize)) limit of \(limit) bytes"))
        }
        return .success(type)
    }

    /// The most a body of this type may hold while it downloads. Images up to the source limit
    /// are fitted afterwards when normalizing. An MPEG-4 file's kind is only known once its
    /// streams are probed (an `.mp4` may hold only audio, an `.m4a` video), so it gets the
    /// larger of the two limits here and its kind's own limit after the probe.
    static func streamingLimit(for type: MediaType, limits: MediaSizeLimits, normalize: Bool) -> Int64 {
        switch type {
        case _ where type.kind == .image && normalize: return max(limits.image, limits.imageSource)
        case .mp4, .m4v, .m4a, .quickTime, .threeGPP, .threeGPP2: return max(limits.audio, limits.video)
        // An MP3 too long is cut to fit (`needsCut`), up to the same source limit.
        case .mp3 where normalize: return max(limits.audio, limits.video)
        // Lossless or high-rate sources are larger than what they become: up to the video limit.
        case _ where needsTranscode(type): return max(limits.audio, limits.video)
        default: return limits.limit(for: type.kind)
        }
    }

    static func limitName(_ type: MediaType, normalize: Bool) -> String {
        switch type {
        case _ where type.kind == .image && normalize: return "image source"
        case .mp4, .m4v, .m4a, .quickTime, .threeGPP, .threeGPP2: return "MPEG-4"
        case .mp3 where normalize: return "MP3 source"
        case _ where needsTranscode(type): return "\(type.kind.rawValue) source"
        default: return type.kind.rawValue
        }
    }

    /// A container iOS would not take whose streams it may play as they are (QuickTime, 3GPP,
    /// an MPEG transport stream, Matroska, AAC in ADTS) is remuxed into MPEG-4; a stream MPEG-4
    /// cannot carry sends it on to the transcoder.
    package static func needsRemux(_ type: MediaType) -> Bool {
        type.kind != .image && !type.isDeliverable && !needsTranscode(type)
    }

    /// A container iOS would not take, whose streams are re-encoded (`MediaType.transcoded`: Ogg,
    /// FLAC, AC-3, Monkey's Audio, Musepack, DSF, WebM, Ogg Theora, ASF, Flash Video): sound
    /// into AAC in MPEG-4 audio, video into H.264 and AAC in MPEG-4.
    package static func needsTranscode(_ type: MediaType) -> Bool {
        MediaType.transcoded.contains(type)
    }

    /// An MP3 over the audio limit is cut after the last whole frame that fits (`MP3Cutter`),
    /// when converting is on: iOS plays it, it is only too long.
    package static func needsCut(_ type: MediaType, bytes: Int64, limits: MediaSizeLimits) -> Bool {
        type == .mp3 && bytes > limits.audio
    }

    /// An image is converted (normalized) when iOS would not show it as it is.
    package static func needsConversion(_ type: MediaType, bytes: Int64, limits: MediaSizeLimits) -> Bool {
        type.kind == .image && (!type.isDeliverable || bytes > limits.image)
    }

    /// The delivered file against its kind's limit, once the kind is final (an MPEG-4 file
    /// streamed under the larger of the audio and video limits).
    package static func checkDelivered(_ type: MediaType, bytes: Int64, limits: MediaSizeLimits) -> Reason? {
        let limit = limits.limit(for: type.kind)
        guard bytes > limit else { return nil }
        return Reason(code: .sizeLimitExceeded,
                       message: "the file is \(type.mimeType) (its streams say so), and its \(bytes) bytes exceed the \(type.kind.rawValue) limit of \(limit) bytes")
    }
}
