import CFFmpeg
import Foundation
import Testing
@testable import AttachFetch
@testable import AttachFetchCore
@testable import AttachFetchMedia

/// The first decoded video frame of a file, handed to `body`.
func frameOf(_ path: String, _ body: (UnsafeMutablePointer<AVFrame>) throws -> Void) throws {
    let input = try AVInput(path: path, demuxers: MediaProber.demuxers(for: .mp4), decoders: MediaProber.decoders.sorted().joined(separator: ","))
    let stream = try #require(input.streams.first { $0.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO })
    let decoder = try AVDecoder(stream: stream, allowed: MediaProber.decoders, maxPixels: 50_000_000)
    let packet = try AVPacketBox(), frame = try AVFrameBox()
    while av_read_frame(input.context, packet.pointer) >= 0 {
        defer { av_packet_unref(packet.pointer) }
        guard packet.pointer.pointee.stream_index == stream.pointee.index else { continue }
        _ = avcodec_send_packet(decoder.context, packet.pointer)
        if avcodec_receive_frame(decoder.context, frame.pointer) >= 0 { return try body(frame.pointer) }
    }
    avcodec_send_packet(decoder.context, nil)
    guard avcodec_receive_frame(decoder.context, frame.pointer) >= 0 else { throw Reason(code: .corruptMedia, message: "no frame") }
    try body(frame.pointer)
}

/// The display size ffprobe (an independent reader) reports for a file's first video stream:
/// sample aspect ratio and rotation applied, as a player shows it.
func ffprobeDisplaySize(_ path: String) throws -> (width: Int, height: Int)? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
    process.arguments = ["-v", "error", "-select_streams", "v:0", "-show_entries",
                         "stream=width,height,sample_aspect_ratio:stream_side_data=rotation", "-of", "json", path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard let json = try JSONSerialization.jsonObject(with: data) as? [String: Any],
          let stream = (json["streams"] as? [[String: Any]])?.first,
          var width = stream["width"] as? Int, var height = stream["height"] as? Int else { return nil }
    if let aspect = stream["sample_aspect_ratio"] as? String, aspect != "1:1", aspect != "0:1" {
        let parts = aspect.split(separator: ":").compactMap { Double($0) }
        if parts.count == 2, parts[0] > 0, parts[1] > 0 { width = max(1, Int((Double(width) * parts[0] / parts[1]).rounded())) }
    }
    let rotation = ((stream["side_data_list"] as? [[String: Any]])?.compactMap { $0["rotation"] as? Int }.first) ?? 0
    if abs(rotation) % 180 == 90 { swap(&width, &height) }
    return (width, height)
}
