internal import CFFmpeg

/// What iOS plays as delivered: the one table the probe and the remuxer follow
/// (docs/media.md#what-ios-plays). Apple's sources: the HLS authoring specification for Apple
/// devices (H.264 up to High profile, 8-bit 4:2:0; HEVC Main and Main 10, which "must be
/// signaled as hvc1"), and AVFoundation's `AVURLAsset.audiovisualTypes`.
package enum PlayableMedia {
    enum Verdict: Equatable, Sendable {
        case plays
        /// HEVC tagged `hev1`: AVFoundation plays HEVC only tagged `hvc1`.
        case needsHVC1Tag
        /// Not playable as it is: what it is, named as people know it ("H.264 High 4:4:4 Predictive").
        case cannotPlay(String)
    }

    /// The rule for the video stream's codec, profile, sample format and tag.
    package static let rule = "iOS plays H.264 up to High profile in 8-bit 4:2:0, and HEVC Main or Main 10 tagged hvc1"

    /// The rule for sound in MPEG-4 (video's or alone).
    static let audioRule = "iOS plays AAC, MP3 and ALAC in MPEG-4"

    /// Sound in an MPEG-4 file: AAC, MP3 or ALAC plays; Opus, FLAC, PCM, AC-3, ... in MPEG-4 do
    /// not (`AVURLAsset.audiovisualTypes`; AC-3 and E-AC-3 only through an HDMI receiver).
    static func audioInMPEG4(_ codec: AVCodecID) -> Verdict {
        [AV_CODEC_ID_AAC, AV_CODEC_ID_MP3, AV_CODEC_ID_ALAC].contains(codec) ? .plays : .cannotPlay(title(codec))
    }

    /// `hvc1`, as the MPEG-4 muxer's `codec_tag`.
    static let hvc1Tag = tag("hvc1")
    static let hev1Tag = tag("hev1")

    /// `decodedFormat`: a decoded frame's sample format, for a header that states none.
    static func video(_ parameters: UnsafeMutablePointer<AVCodecParameters>, decodedFormat: Int32? = nil) -> Verdict {
        let codec = parameters.pointee.codec_id
        let profile = parameters.pointee.profile
        let format = AVPixelFormat(rawValue: parameters.pointee.format >= 0 ? parameters.pointee.format : decodedFormat ?? -1)
        let unknownProfile: Int32 = -99 // FF_PROFILE_UNKNOWN
        switch codec {
        case AV_CODEC_ID_H264:
            // Baseline 66, Constrained Baseline 66|512, Main 77, High 100.
            guard [66, 66 | 512, 77, 100, unknownProfile].contains(profile) else {
                return .cannotPlay("H.264 \(profileName(codec, profile))")
            }
            guard [AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P].contains(format) else {
                return .cannotPlay("H.264 in \(pixelFormatName(format)) (not 8-bit 4:2:0)")
            }
            return .plays
        case AV_CODEC_ID_HEVC:
            // Main 1, Main 10 2.
            guard [1, 2, unknownProfile].contains(profile) else { return .cannotPlay("HEVC \(profileName(codec, profile))") }
            guard [AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUV420P10LE].contains(format) else {
                return .cannotPlay("HEVC in \(pixelFormatName(format)) (not 4:2:0 at 8 or 10 bits)")
            }
            guard parameters.pointee.codec_tag == hev1Tag else { return .plays }
            // Re-tagged, the file would have no parameter sets where iOS reads them: re-encoded.
            let size = Int(max(0, parameters.pointee.extradata_size))
            guard let extradata = parameters.pointee.extradata,
                  HEVCParameterSets.inHeader(UnsafeBufferPointer(start: extradata, count: size)) else {
                return .cannotPlay("HEVC tagged hev1 with its parameter sets only in the stream")
            }
            return .needsHVC1Tag
        default:
            return .plays
        }
    }

    /// A codec as people name it ("AV1", "VP9", "Opus"), never a decoder library's name
    /// ("libdav1d").
    static func title(_ codec: AVCodecID) -> String {
        let name = String(cString: avcodec_get_name(codec))
        if name.hasPrefix("pcm_") { return "PCM" }
        return titles[name] ?? name.uppercased()
    }

    private static let titles = [
        "h264": "H.264", "hevc": "HEVC", "av1": "AV1", "vp8": "VP8", "vp9": "VP9", "theora": "Theora",
        "mpeg1video": "MPEG-1 video", "mpeg2video": "MPEG-2 video", "mpeg4": "MPEG-4 Part 2", "h263": "H.263",
        "opus": "Opus", "vorbis": "Vorbis", "flac": "FLAC", "mp2": "MP2", "mp3": "MP3", "aac": "AAC", "alac": "ALAC",
        "ac3": "AC-3", "eac3": "E-AC-3", "dts": "DTS", "amr_nb": "AMR-NB", "amr_wb": "AMR-WB", "mjpeg": "Motion JPEG",
        "prores": "ProRes", "dnxhd": "DNxHD", "wmv3": "WMV 9", "msmpeg4v3": "MS MPEG-4 v3",
        "wmv1": "WMV 7", "wmv2": "WMV 8", "vc1": "VC-1", "flv1": "Sorenson Spark", "vp6f": "VP6", "vp6a": "VP6",
        "wmav1": "WMA 1", "wmav2": "WMA 2", "wmapro": "WMA Pro", "wmalossless": "WMA Lossless", "wmavoice": "WMA Voice",
        "ape": "Monkey's Audio", "musepack7": "Musepack", "musepack8": "Musepack", "nellymoser": "Nellymoser",
        "dsd_lsbf": "DSD", "dsd_msbf": "DSD", "dsd_lsbf_planar": "DSD", "dsd_msbf_planar": "DSD",
    ]

    private static func profileName(_ codec: AVCodecID, _ profile: Int32) -> String {
        avcodec_profile_name(codec, profile).map { String(cString: $0) } ?? "profile \(profile)"
    }

    private static func pixelFormatName(_ format: AVPixelFormat) -> String {
        av_get_pix_fmt_name(format).map { String(cString: $0) } ?? "an unknown sample format"
    }

    private static func tag(_ code: String) -> UInt32 {
        code.utf8.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }
}
