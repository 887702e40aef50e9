internal import CFFmpeg
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Re-encodes what iOS cannot play into what it does, with FFmpeg's libraries (never the
/// `ffmpeg` program), in the decoder workers:
/// - audio alone (Opus and Vorbis in Ogg, FLAC) into AAC-LC in MPEG-4 audio (`.m4a`);
/// - video (WebM and Matroska: VP8, VP9, AV1, ...; an animated GIF too large as a GIF) into
///   H.264 High, 8-bit 4:2:0, at most `maxLongEdge`, with its first audio stream as AAC-LC, in
///   MPEG-4 (`.mp4`).
///
/// `moov` comes first. A source whose result would not fit the limit is cut at the last frame
/// that fits, and one that cannot be encoded whole by `stopAt` at the last frame encoded by
/// then (once the first stream, the video if any, has a frame: flushing the encoder makes
/// a clip of whatever it was given); both say so (`trimmed`).
/// Blocking: a decode job.
package enum MediaTranscoder {
    /// The decoders of the codecs transcoded from; no other decoder runs.
    package static let decoders: Set<String> = [
        "opus", "vorbis", "flac", "aac", "aac_fixed", "mp3float", "mp3", "mp2float", "mp2", "ac3", "eac3", "dca", "alac",
        "amrnb", "amrwb", "pcm_s16le", "pcm_s16be", "pcm_s24le", "pcm_s24be", "pcm_s32le", "pcm_s32be", "pcm_u8", "pcm_s8",
        "pcm_f32le", "pcm_f32be", "pcm_alaw", "pcm_mulaw", "adpcm_ima_qt", "adpcm_ima_wav", "adpcm_ms",
        "vp8", "vp9", "libdav1d", "theora", "h264", "hevc", "mpeg4", "mpeg1video", "mpeg2video", "h263", "msmpeg4v2", "msmpeg4v3",
        "mjpeg", "prores", "gif",
        "wmav1", "wmav2", "wmapro", "wmalossless", "wmavoice", "wmv1", "wmv2", "wmv3", "vc1", "flv", "vp6f", "vp6a", "nellymoser",
        "ape", "mpc7", "mpc8", "dsd_lsbf", "dsd_msbf", "dsd_lsbf_planar", "dsd_msbf_planar",
    ]

    package static func transcode(source: String, type: MediaType, destinationBase: String, limits: TranscodeLimits,
                          shouldStop: () -> Bool = { false }) -> Result<TranscodedMedia, Reason> {
        // An MP3 iOS plays; it is only too long (`MediaPolicy.needsCut`).
        if type == .mp3 {
            return MP3Cutter.cut(source: source, destinationBase: destinationBase, maxBytes: limits.audioOnlyMaxBytes ?? limits.maxBytes,
                                 shouldStop: shouldStop)
        }
        let file = destinationBase + (type.kind == .audio ? ".m4a" : ".mp4")
        var rung = 0
        while true {
            do throws(Reason) {
                switch try transcodeStreams(source: source, type: type, file: file, limits: limits, rung: rung, shouldStop: shouldStop) {
                case .made(let made): return .success(made)
                case .tooSlow(let lacking, let measured):
                    // Too slow for the whole clip by the budget's end, and what it was given could
                    // not all be kept: again from the start, as much faster as it lacks.
                    SafeFile.discard(file)
                    rung = SpeedLadder.rung(after: measured, lacking: lacking)
                }
            } catch {
                SafeFile.discard(file)
                return .failure(error)
            }
        }
    }

    /// What one try made: the file, or how many times too slow the preset of rung `measured`
    /// was to make the whole clip by the budget's end, while a faster rung is left
    /// (`SpeedLadder`).
    enum Attempt {
        case made(TranscodedMedia)
        case tooSlow(Double, measured: Int)
    }

    private static func transcodeStreams(source: String, type: MediaType, file: String, limits: TranscodeLimits, rung firstRung: Int,
                                         shouldStop: () -> Bool) throws(Reason) -> Attempt {
        let input = try AVInput(path: source, demuxers: MediaProber.demuxers(for: type), decoders: decoders.sorted().joined(separator: ","))
        // An animated GIF is video here.
        let videoStream = type.kind != .audio ? input.streams.first {
            $0.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO && $0.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0
        } : nil
        let audio = try openAudio(input, limits: limits)
        let audioStream = audio?.0.stream
        guard videoStream != nil || audioStream != nil else {
            throw Reason(code: .corruptMedia, message: "the file has no \(type.kind == .audio ? "audio" : "audio or video") stream")
        }
        let sourceAudio = audioStream.map { PlayableMedia.title($0.pointee.codecpar.pointee.codec_id) }
        let sourceVideo = videoStream.map { PlayableMedia.title($0.pointee.codecpar.pointee.codec_id) }
        // The stream's stated area, before any frame is decoded (every codec alike); each
        // decoded frame is checked again (`checkArea`), and the decoder itself refuses larger.
        if let videoStream {
            let parameters = videoStream.pointee.codecpar.pointee
            try checkArea(width: Int(parameters.width), height: Int(parameters.height), limits: limits)
        }
        let origin = origin(of: [videoStream, audioStream].compactMap { $0 })
        // The stated duration, when the file's size makes it plausible (16 kb/s or more over
        // it): a header that claims 10^12 s for a few megabytes would size the bit rate, and the
        // speed ladder's projection, for the lie. Without one, CRF alone decides and the size
        // limit still cuts what does not fit.
        let stated = input.duration.flatMap { Double(input.fileBytes) * 8 / $0 >= 16_000 ? $0 : nil }
        var tracks: [Track] = []
        var audioEncoder: AudioEncoder?
        var sourceSize: (width: Int, height: Int)?
        var videoBudget: Int64?
        if let videoStream {
            let parameters = videoStream.pointee.codecpar.pointee
            let decoder = try AVDecoder(stream: videoStream, allowed: decoders,
                                        threads: decoderThreads(width: Int(parameters.width), height: Int(parameters.height)),
                                        maxPixels: limits.maxPixels)
            sourceSize = (Int(parameters.width), Int(parameters.height))
            // The most bits a second that keeps the whole clip within the limit (audio and the
            // index aside), when the duration is known; CRF decides below it. At most 8 Mb/s,
            // past what CRF 23 asks at 1280 pixels, so that a short clip's budget does not make
            // the encoder's buffer (and the margin below) huge.
            videoBudget = stated.map { max(200_000, min(8_000_000, Int64(Double(limits.maxBytes) * 8 * 0.9 / $0) - 200_000)) }
            tracks.append(Track(input: videoStream, decoder: decoder, isVideo: true))
        }
        if let (decoder, encoder) = audio {
            try encoder.start(origin: origin, streamTimeBase: decoder.stream.pointee.time_base)
            audioEncoder = encoder
            tracks.append(Track(input: decoder.stream, decoder: decoder, isVideo: false))
        }
        let pass = try TranscodePass(input: input, file: file, type: type, limits: limits, tracks: tracks, audioEncoder: audioEncoder,
                                     videoStream: videoStream, sourceSize: sourceSize, videoBudget: videoBudget, origin: origin,
                                     stated: stated, rung: firstRung)
        return try pass.run(sourceAudio: sourceAudio, sourceVideo: sourceVideo, shouldStop: shouldStop)
    }
}
