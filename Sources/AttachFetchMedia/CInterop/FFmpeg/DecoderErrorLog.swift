internal import CFFmpeg
internal import CFFmpegShims
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// Errors FFmpeg's decoders log without returning them: a Vorbis overread, an H.264 slice
/// concealed. They are what `ffmpeg -v error` prints, and what makes a delivered file `partial`
/// beside the packets a decoder refuses outright.
///
/// A transcode marks its decoders with a token (`AVCodecContext.opaque`, which FFmpeg copies to
/// a frame-threaded decoder's per-thread contexts, so their messages count too) and takes what
/// was logged for it at the end. FFmpeg's log is process-wide; the token keeps two transcodes in
/// one process (isolation `.none`) apart. Everything else logged is dropped, as before.
enum DecoderErrorLog {
    struct Entry: Sendable {
        var count = 0
        /// The last message, as FFmpeg wrote it.
        var last = ""
    }

    private static let logged = Locked<[UInt: Entry]>([:])
    private static let nextToken = Atomic<UInt>(1)

    /// Installed once, with FFmpeg's start-up.
    static func install() { af_av_log_set_sink(sink, AV_LOG_ERROR) }

    /// A new token, to set as each of one transcode's decoders' `opaque`.
    static func begin() -> UInt {
        let token = nextToken.add(1, ordering: .relaxed).newValue
        logged.withLock { $0[token] = Entry() }
        return token
    }

    /// What was logged for `token`, which is then forgotten.
    static func take(_ token: UInt) -> Entry {
        logged.withLock { $0.removeValue(forKey: token) } ?? Entry()
    }

    private static let sink: af_av_log_sink = { context, _, message in
        guard let context, let message,
              let type = context.assumingMemoryBound(to: UnsafePointer<AVClass>?.self).pointee,
              type == avcodec_get_class() else { return }
        let codec = context.assumingMemoryBound(to: AVCodecContext.self)
        guard av_codec_is_decoder(codec.pointee.codec) != 0, let opaque = codec.pointee.opaque else { return }
        let token = UInt(bitPattern: opaque)
        let text = String(TextFormat.trimmed(String(cString: message)))
        logged.withLock { entries in
            guard entries[token] != nil else { return }
            entries[token]!.count += 1
            entries[token]!.last = text
        }
    }
}
