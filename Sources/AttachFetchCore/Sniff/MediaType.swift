/// One row of the table of formats an iOS notification attachment accepts
/// (Apple's UNNotificationAttachment documentation). Nothing outside it is ever kept.
public struct MediaType: Sendable, Hashable {
    /// Image, audio or video.
    public let kind: AttachmentDescriptor.Kind
    /// Canonical MIME type reported in descriptors.
    public let mimeType: String
    /// Uniform Type Identifier iOS uses for it.
    public let uti: String
    /// Extension of the saved file: iOS refuses attachments whose extension does not match.
    public let fileExtension: String

    /// JPEG.
    public static let jpeg = MediaType(kind: .image, mimeType: "image/jpeg", uti: "public.jpeg", fileExtension: "jpg")
    /// PNG.
    public static let png = MediaType(kind: .image, mimeType: "image/png", uti: "public.png", fileExtension: "png")
    /// GIF, still or animated.
    public static let gif = MediaType(kind: .image, mimeType: "image/gif", uti: "com.compuserve.gif", fileExtension: "gif")
    /// AIFF audio.
    public static let aiff = MediaType(kind: .audio, mimeType: "audio/aiff", uti: "public.aiff-audio", fileExtension: "aiff")
    /// WAV audio.
    public static let wav = MediaType(kind: .audio, mimeType: "audio/wav", uti: "com.microsoft.waveform-audio", fileExtension: "wav")
    /// MP3 audio.
    public static let mp3 = MediaType(kind: .audio, mimeType: "audio/mpeg", uti: "public.mp3", fileExtension: "mp3")
    /// MPEG-4 audio.
    public static let m4a = MediaType(kind: .audio, mimeType: "audio/mp4", uti: "public.mpeg-4-audio", fileExtension: "m4a")
    /// MPEG-1/2 video.
    public static let mpeg = MediaType(kind: .video, mimeType: "video/mpeg", uti: "public.mpeg", fileExtension: "mpg")
    /// MPEG-4 video.
    public static let mp4 = MediaType(kind: .video, mimeType: "video/mp4", uti: "public.mpeg-4", fileExtension: "mp4")
    /// MPEG-4 video with the `m4v` extension.
    public static let m4v = MediaType(kind: .video, mimeType: "video/x-m4v", uti: "public.mpeg-4", fileExtension: "m4v")
    /// AVI video.
    public static let avi = MediaType(kind: .video, mimeType: "video/x-msvideo", uti: "public.avi", fileExtension: "avi")

    /// Every format iOS accepts as it is: the table.
    public static let all: [MediaType] = [.jpeg, .png, .gif, .aiff, .wav, .mp3, .m4a, .mpeg, .mp4, .m4v, .avi]

    // Images iOS does not take as attachments, which the pipeline converts (normalizing on).
    /// WebP, converted to JPEG, PNG or GIF.
    public static let webp = MediaType(kind: .image, mimeType: "image/webp", uti: "org.webmproject.webp", fileExtension: "webp")
    /// HEIC, converted to JPEG or PNG.
    public static let heic = MediaType(kind: .image, mimeType: "image/heic", uti: "public.heic", fileExtension: "heic")
    /// HEIF, converted to JPEG or PNG.
    public static let heif = MediaType(kind: .image, mimeType: "image/heif", uti: "public.heif", fileExtension: "heif")
    /// AVIF, converted to JPEG or PNG.
    public static let avif = MediaType(kind: .image, mimeType: "image/avif", uti: "public.avif", fileExtension: "avif")

    // Video containers iOS does not take as attachments, whose streams an MPEG-4 file can carry
    // as they are: remuxed (stream copy) into MPEG-4 when converting is on.
    /// QuickTime movies, remuxed into MPEG-4.
    public static let quickTime = MediaType(kind: .video, mimeType: "video/quicktime", uti: "com.apple.quicktime-movie", fileExtension: "mov")
    /// 3GPP video, remuxed into MPEG-4.
    public static let threeGPP = MediaType(kind: .video, mimeType: "video/3gpp", uti: "public.3gpp", fileExtension: "3gp")
    /// 3GPP2 video, remuxed into MPEG-4.
    public static let threeGPP2 = MediaType(kind: .video, mimeType: "video/3gpp2", uti: "public.3gpp2", fileExtension: "3g2")
    /// MPEG transport streams (HLS segments, broadcast captures).
    public static let mpegTS = MediaType(kind: .video, mimeType: "video/mp2t", uti: "public.mpeg-2-transport-stream", fileExtension: "ts")
    /// Matroska: its streams moved into MPEG-4 when MPEG-4 carries them as they are (H.264,
    /// HEVC, MPEG-4 Part 2; AAC, MP3, ALAC, AC-3), otherwise transcoded to H.264 and AAC in `.mp4`.
    public static let matroska = MediaType(kind: .video, mimeType: "video/x-matroska", uti: "org.matroska.mkv", fileExtension: "mkv")
    /// AAC in ADTS (raw `.aac` streams): moved into MPEG-4 audio, not re-encoded.
    public static let aac = MediaType(kind: .audio, mimeType: "audio/aac", uti: "public.aac-audio", fileExtension: "aac")

    // Audio iOS does not play, re-encoded to AAC in MPEG-4 audio when converting is on.
    /// Ogg (Opus voice notes, Vorbis), transcoded to `.m4a`.
    public static let ogg = MediaType(kind: .audio, mimeType: "audio/ogg", uti: "org.xiph.ogg-audio", fileExtension: "ogg")
    /// FLAC, transcoded to `.m4a`.
    public static let flac = MediaType(kind: .audio, mimeType: "audio/flac", uti: "org.xiph.flac", fileExtension: "flac")
    /// AC-3 alone (a raw Dolby Digital stream), transcoded to `.m4a`.
    public static let ac3 = MediaType(kind: .audio, mimeType: "audio/ac3", uti: "public.ac3-audio", fileExtension: "ac3")
    /// Monkey's Audio, transcoded to `.m4a`.
    public static let ape = MediaType(kind: .audio, mimeType: "audio/x-ape", uti: "com.monkeysaudio.ape", fileExtension: "ape")
    /// Musepack, transcoded to `.m4a`.
    public static let musepack = MediaType(kind: .audio, mimeType: "audio/x-musepack", uti: "net.musepack.mpc", fileExtension: "mpc")
    /// DSD in DSF, transcoded to `.m4a`.
    public static let dsf = MediaType(kind: .audio, mimeType: "audio/x-dsf", uti: "com.sony.dsf", fileExtension: "dsf")
    /// Raw AMR-NB or AMR-WB (`#!AMR`, `#!AMR-WB`: what Android's voice recorders write),
    /// transcoded to `.m4a` as the same stream inside 3GPP is.
    public static let amr = MediaType(kind: .audio, mimeType: "audio/amr", uti: "org.3gpp.adaptive-multi-rate-audio", fileExtension: "amr")

    /// WebM (VP8, VP9 or AV1 with Opus or Vorbis), transcoded to H.264 and AAC in `.mp4`.
    public static let webm = MediaType(kind: .video, mimeType: "video/webm", uti: "org.webmproject.webm", fileExtension: "webm")
    /// Ogg video (Theora), transcoded to H.264 and AAC in `.mp4`.
    public static let oggVideo = MediaType(kind: .video, mimeType: "video/ogg", uti: "org.xiph.ogg-video", fileExtension: "ogv")
    /// ASF (Windows Media: WMA and WMV), transcoded to `.mp4`; WMA alone ends as `.m4a`.
    public static let asf = MediaType(kind: .video, mimeType: "video/x-ms-asf", uti: "com.microsoft.advanced-systems-format", fileExtension: "asf")
    /// Flash Video, transcoded to H.264 and AAC in `.mp4`.
    public static let flv = MediaType(kind: .video, mimeType: "video/x-flv", uti: "com.adobe.flash-video", fileExtension: "flv")

    /// Formats that are converted to one in `all` before delivery, never delivered as they are.
    public static let convertible: [MediaType] = [.webp, .heic, .heif, .avif, .quickTime, .threeGPP, .threeGPP2, .mpegTS, .matroska, .aac,
                                                  .ogg, .flac, .ac3, .ape, .musepack, .dsf, .amr, .webm, .oggVideo, .asf, .flv]

    /// The convertible formats whose streams are re-encoded (transcoded), not only moved.
    public static let transcoded: [MediaType] = [.ogg, .flac, .ac3, .ape, .musepack, .dsf, .amr, .webm, .oggVideo, .asf, .flv]

    /// True for the formats iOS accepts as they are.
    public var isDeliverable: Bool { MediaType.all.contains(self) }

    /// libmagic's answers (it has several spellings for some formats) mapped to the table.
    private static let byMagicMIME: [String: MediaType] = [
        "image/jpeg": .jpeg, "image/pjpeg": .jpeg,
        "image/png": .png,
        "image/gif": .gif,
        "audio/x-aiff": .aiff, "audio/aiff": .aiff,
        "audio/x-wav": .wav, "audio/wav": .wav, "audio/vnd.wave": .wav, "audio/wave": .wav,
        "audio/mpeg": .mp3, "audio/mp3": .mp3,
        "audio/x-m4a": .m4a, "audio/mp4": .m4a, "audio/m4a": .m4a,
        "video/mpeg": .mpeg, "video/mp2p": .mpeg, "video/mpv": .mpeg,
        "video/mp4": .mp4,
        "video/x-m4v": .m4v,
        "video/x-msvideo": .avi, "video/avi": .avi, "video/msvideo": .avi,
    ]

    private static let convertibleByMagicMIME: [String: MediaType] = [
        "image/webp": .webp, "image/x-webp": .webp,
        "image/heic": .heic, "image/heic-sequence": .heic,
        "image/heif": .heif, "image/heif-sequence": .heif,
        "image/avif": .avif,
        "video/quicktime": .quickTime,
        "video/3gpp": .threeGPP, "audio/3gpp": .threeGPP,
        "video/3gpp2": .threeGPP2, "audio/3gpp2": .threeGPP2,
        "video/mp2t": .mpegTS,
        "audio/ogg": .ogg, "application/ogg": .ogg, "audio/x-ogg": .ogg,
        "audio/flac": .flac, "audio/x-flac": .flac,
        "video/webm": .webm, "audio/webm": .webm, "video/x-matroska": .matroska, "audio/x-matroska": .matroska,
        "audio/x-hx-aac-adts": .aac, "audio/aac": .aac, "audio/x-aac": .aac,
        "audio/vnd.dolby.dd-raw": .ac3, "audio/ac3": .ac3,
        "audio/x-ape": .ape, "audio/x-musepack": .musepack, "audio/x-dsf": .dsf,
        "audio/amr": .amr, "audio/amr-wb": .amr,
        "video/ogg": .oggVideo, "video/x-ms-asf": .asf, "audio/x-ms-wma": .asf, "video/x-ms-wmv": .asf, "video/x-flv": .flv,
    ]

    /// The table row for a MIME type as libmagic reports it, or nil when it is not allowed.
    public static func forSniffedMIME(_ mime: String) -> MediaType? {
        byMagicMIME[mime.lowercased()]
    }

    /// The convertible format for a MIME type as libmagic reports it, or nil.
    public static func convertibleForSniffedMIME(_ mime: String) -> MediaType? {
        convertibleByMagicMIME[mime.lowercased()]
    }
}

// MARK: - Codable, for the pipe to a decoder worker

/// A table row travels as its MIME type.
extension MediaType: Codable {
    /// Decodes a table row from its MIME type; throws for a type the table does not hold.
    public init(from decoder: any Decoder) throws {
        let mime = try decoder.singleValueContainer().decode(String.self)
        guard let type = (MediaType.all + MediaType.convertible).first(where: { $0.mimeType == mime }) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "no table row for \(mime)"))
        }
        self = type
    }

    /// Encodes the row as its MIME type.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(mimeType)
    }
}
