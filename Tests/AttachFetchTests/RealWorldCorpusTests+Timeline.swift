import Foundation
import Testing
@testable import AttachFetch

extension RealWorldCorpusTests {
    /// A file's first video and first audio stream as ffprobe reads them: `start_time`, the end
    /// of the last packet, and the number of packets.
    struct Timeline {
        struct Stream {
            var start: Double
            var end: Double
            var packets: Int
        }
        var video: Stream?
        var audio: Stream?

        static func read(_ file: String) throws -> Timeline {
            let run = try tool("/usr/bin/ffprobe", ["-v", "error", "-show_entries",
                                                   "stream=index,codec_type,start_time:stream_disposition=attached_pic:packet=stream_index,pts_time,duration_time",
                                                   "-of", "json", file])
            guard run.status == 0, let json = try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any] else {
                return Timeline()
            }
            let streams = json["streams"] as? [[String: Any]] ?? []
            func first(_ type: String) -> (index: Int, start: Double)? {
                for stream in streams where stream["codec_type"] as? String == type {
                    if ((stream["disposition"] as? [String: Any])?["attached_pic"] as? Int) == 1 { continue }
                    guard let index = stream["index"] as? Int, let start = Double(stream["start_time"] as? String ?? "") else { return nil }
                    return (index, start)
                }
                return nil
            }
            let packets = json["packets"] as? [[String: Any]] ?? []
            func stream(_ type: String) -> Stream? {
                guard let (index, start) = first(type) else { return nil }
                var end = start, count = 0
                for packet in packets where packet["stream_index"] as? Int == index {
                    guard let pts = Double(packet["pts_time"] as? String ?? "") else { continue }
                    count += 1
                    end = max(end, pts + (Double(packet["duration_time"] as? String ?? "") ?? 0))
                }
                return Stream(start: start, end: end, packets: count)
            }
            return Timeline(video: stream("video"), audio: stream("audio"))
        }
    }

    /// A file attach-fetch made (re-encoded or remuxed into MPEG-4) against its source, as
    /// `TranscodeSyncTests` holds its own clips: the index before the media, sound and picture
    /// as far apart as in the source (within 40 ms), and, when nothing was cut, as many video
    /// frames as the source has packets (90 % at least: a packet the decoder refuses makes none);
    /// the file starting at 0 (within 0.1 s) and described as long as its packets last (within
    /// 0.5 s).
    static func checkTimeline(_ d: AttachmentDescriptor, file: String, original: String) throws -> String? {
        let transforms = d.transforms ?? []
        guard transforms.contains(.transcoded) || transforms.contains(.remuxed), d.kind == .video || d.kind == .audio else { return nil }
        let boxes = try AudioTranscodeTests.topLevelBoxes(file)
        guard (boxes.firstIndex(of: "moov") ?? .max) < (boxes.firstIndex(of: "mdat") ?? -1) else { return "the index is not before the media: \(boxes)" }
        let source = try Timeline.read(original), delivered = try Timeline.read(file)
        if let sourceVideo = source.video, let sourceAudio = source.audio, let video = delivered.video, let audio = delivered.audio {
            let was = sourceAudio.start - sourceVideo.start, now = audio.start - video.start
            if abs(now - was) > TranscodeSyncTests.tolerance {
                return String(format: "sound %.3f s after the picture, the source %.3f s", now, was)
            }
        }
        // It starts at 0, and the descriptor's duration is its streams' length from their packets.
        let streams = [delivered.video, delivered.audio].compactMap { $0 }
        if let start = streams.map(\.start).min(), let end = streams.map(\.end).max() {
            if abs(start) > 0.1 { return String(format: "the delivered file starts at %.3f s, not 0", start) }
            if let described = d.duration, abs(described - (end - start)) > 0.5 {
                return String(format: "described as %.3f s, its packets last %.3f s", described, end - start)
            }
        }
        if let sourceVideo = source.video, let video = delivered.video, !transforms.contains(.trimmed), !transforms.contains(.partial),
           Double(video.packets) < Double(sourceVideo.packets) * 0.9 {
            return "\(video.packets) video frames from the source's \(sourceVideo.packets) packets"
        }
        return nil
    }
}
