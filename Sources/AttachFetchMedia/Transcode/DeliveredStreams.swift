internal import CFFmpeg
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A transcode's output as a player reads it: each stream's packets counted and their times
/// read back from the finished MPEG-4 file (edit lists applied, nothing decoded), so that what
/// is delivered is checked against what the source promised before it is called `ready`.
struct DeliveredStreams {
    struct Stream {
        var packets = 0
        /// Seconds on the file's timeline: the first packet's time, and the last one's end.
        var start = Double.infinity
        var end = 0.0

        var span: Double { packets == 0 ? 0 : max(0, end - max(0, start)) }
    }

    var video: Stream?
    var audio: Stream?

    /// Seconds from the file's start to the end of its longest stream.
    var duration: Double { max(video?.end ?? 0, audio?.end ?? 0) }

    /// A delivered stream that ends before this share of what the source's packets span, and
    /// more than `longestShortfall` seconds before, stopped decoding: the rest was damaged.
    static let shortestShare = 0.5
    static let longestShortfall = 2.0

    static func read(_ file: String) throws(Reason) -> DeliveredStreams {
        let input = try AVInput(path: file, demuxers: "mov,mp4,m4a,3gp,3g2,mj2", decoders: "h264,aac")
        var delivered = DeliveredStreams()
        var byIndex: [Int32: Bool] = [:]
        for stream in input.streams {
            switch stream.pointee.codecpar.pointee.codec_type {
            case AVMEDIA_TYPE_VIDEO:
                byIndex[stream.pointee.index] = true
                delivered.video = Stream()
            case AVMEDIA_TYPE_AUDIO:
                byIndex[stream.pointee.index] = false
                delivered.audio = Stream()
            default: continue
            }
        }
        let packet = try AVPacketBox()
        while true {
            let status = av_read_frame(input.context, packet.pointer)
            if status == FFmpeg.endOfFile { break }
            guard status >= 0 else { throw FFmpeg.failure(.ioError, "FFmpeg cannot read back the transcoded file", status) }
            defer { av_packet_unref(packet.pointer) }
            let index = packet.pointer.pointee.stream_index
            guard let isVideo = byIndex[index], let stream = input.streams.first(where: { $0.pointee.index == index }) else { continue }
            let timeBase = av_q2d(stream.pointee.time_base)
            let time = packet.pointer.pointee.pts != FFmpeg.noTimestamp ? packet.pointer.pointee.pts : packet.pointer.pointee.dts
            guard time != FFmpeg.noTimestamp else { continue }
            let start = Double(time) * timeBase
            let end = Double(time + max(0, packet.pointer.pointee.duration)) * timeBase
            var counted = (isVideo ? delivered.video : delivered.audio) ?? Stream()
            counted.packets += 1
            counted.start = min(counted.start, start)
            counted.end = max(counted.end, end)
            if isVideo { delivered.video = counted } else { delivered.audio = counted }
        }
        return delivered
    }

    /// Refuses a file that is not what its source promised (`corruptMedia`): a stream of the
    /// source's missing, or one that ends long before the source's packets of it did (a video
    /// that decoded to a frame or two: the rest of its packets were damaged). Each source stream
    /// is named as people know it, with where its packets read end (seconds on the output's
    /// timeline).
    func check(sourceVideo: (name: String, end: Double)?, sourceAudio: (name: String, end: Double)?) throws(Reason) {
        for (source, delivered, what) in [(sourceVideo, video, "video"), (sourceAudio, audio, "audio")] {
            guard let source else { continue }
            guard let delivered, delivered.packets > 0 else {
                throw Reason(code: .corruptMedia, message: "the \(source.name) \(what) decoded to nothing")
            }
            if source.end - delivered.end > Self.longestShortfall, delivered.end < source.end * Self.shortestShare {
                let made = what == "video" ? "\(delivered.packets) frame\(delivered.packets == 1 ? "" : "s")" : "sound"
                throw Reason(code: .corruptMedia, message: "the \(source.name) \(what) decoded to \(made) ending at \(Self.seconds(delivered.end)) s of the source's \(Self.seconds(source.end)) s: the rest is damaged")
            }
        }
    }

    private static func seconds(_ value: Double) -> String { TextFormat.fixed(value, digits: 2) }
}
