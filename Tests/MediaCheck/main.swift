import CFFmpeg
import CTestSupport
import CVips
import Foundation

/// The corpus suite's independent readers: one process per batch of files, where a `vips`, a
/// `vipsheader` or an `ffprobe` process per file each spent 40–70 ms of CPU starting (mostly
/// the dynamic loader). It answers what those commands answer, with the libraries' own
/// defaults (every loader and demuxer; none of attach-fetch's set-up), one request per line on
/// standard input and one JSON line per answer on standard output:
/// - `avg NAME`: does `vips avg NAME` succeed (NAME may carry load options, as in
///   `file.png[fail_on=error]`), and libvips' error text when it does not;
/// - `header FILE`: `vipsheader -a FILE`'s loader, width, height and EXIF orientation;
/// - `probe FILE`: does `ffprobe -show_entries format=format_name:stream=codec_type,codec_name
///   FILE` succeed, and the container's name and each stream's type and codec as it prints them;
/// - `compare SOURCE<TAB>OUTPUT`: how far OUTPUT is from SOURCE as a phone shows each (`Render`).
/// One libvips worker thread: with more, `vips avg` of a damaged PNG sometimes succeeds (an
/// error in one tile is lost between its threads), so its verdict would be luck. No operation
/// cache: every request decodes its file again.
struct Answer: Encodable {
    var ok: Bool
    var errors: String = ""
    var loader: String?
    var width: Int?
    var height: Int?
    var orientation: Int?
    var format: String?
    var streams: [Stream]?
    /// `compare`: the mean absolute difference per pixel and band, 0-255.
    var difference: Double?

    struct Stream: Encodable {
        var type: String
        var codec: String
    }
}

guard vips_init(CommandLine.arguments[0]) == 0 else {
    FileHandle.standardError.write(Data("media-check: vips_init failed\n".utf8))
    exit(2)
}
vips_concurrency_set(1)
vips_cache_set_max(0)
// ffprobe -v error: FFmpeg's warnings are not part of an answer.
av_log_set_level(AV_LOG_QUIET)

/// libvips' error text since the last request, cleared for the next.
func takeErrors() -> String {
    guard let copy = vips_error_buffer_copy() else { return "" }
    defer { g_free(copy) }
    return String(cString: copy)
}

/// FFmpeg's text for an error code.
func ffmpegError(_ code: Int32) -> String {
    var text = [CChar](repeating: 0, count: 256)
    av_strerror(code, &text, text.count)
    return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// What ffprobe does before it prints: it opens the input with `scan_all_pmts` on, reads the
/// streams' parameters, and opens a decoder for each stream FFmpeg has one for, exiting 1 when
/// one does not open.
func probe(_ file: String) -> Answer {
    var context: UnsafeMutablePointer<AVFormatContext>?
    var options: OpaquePointer?
    av_dict_set(&options, "scan_all_pmts", "1", AV_DICT_DONT_OVERWRITE)
    var status = avformat_open_input(&context, file, nil, &options)
    av_dict_free(&options)
    guard status == 0, let opened = context else { return Answer(ok: false, errors: ffmpegError(status)) }
    defer { avformat_close_input(&context) }
    status = avformat_find_stream_info(opened, nil)
    guard status >= 0 else { return Answer(ok: false, errors: ffmpegError(status)) }
    var streams: [Answer.Stream] = []
    for index in 0..<Int(opened.pointee.nb_streams) {
        guard let stream = opened.pointee.streams[index], let parameters = stream.pointee.codecpar else { continue }
        let type = av_get_media_type_string(parameters.pointee.codec_type).map { String(cString: $0) } ?? "unknown"
        let codec = avcodec_descriptor_get(parameters.pointee.codec_id).map { String(cString: $0.pointee.name) } ?? "unknown"
        streams.append(Answer.Stream(type: type, codec: codec))
        guard let decoder = avcodec_find_decoder(parameters.pointee.codec_id) else { continue }
        var decoding = avcodec_alloc_context3(decoder)
        defer { avcodec_free_context(&decoding) }
        guard decoding != nil else { return Answer(ok: false, errors: "could not allocate a decoder for stream \(index)") }
        guard avcodec_parameters_to_context(decoding, parameters) >= 0 else {
            return Answer(ok: false, errors: "could not copy stream \(index)'s parameters")
        }
        decoding?.pointee.pkt_timebase = stream.pointee.time_base
        status = avcodec_open2(decoding, decoder, nil)
        guard status >= 0 else { return Answer(ok: false, errors: "could not open a decoder for stream \(index): \(ffmpegError(status))") }
    }
    return Answer(ok: true, format: String(cString: opened.pointee.iformat.pointee.name), streams: streams)
}

func answer(_ request: Substring) -> Answer {
    vips_error_clear()
    let parts = request.split(separator: "\t", maxSplits: 1)
    guard parts.count == 2 else { return Answer(ok: false, errors: "media-check: expected `avg NAME`, `header FILE` or `probe FILE`") }
    if parts[0] == "probe" { return probe(String(parts[1])) }
    if parts[0] == "compare" {
        let files = parts[1].split(separator: "\t", maxSplits: 1).map(String.init)
        guard files.count == 2 else { return Answer(ok: false, errors: "media-check: expected `compare SOURCE<TAB>OUTPUT`") }
        guard let difference = Render.difference(source: files[0], output: files[1]) else { return Answer(ok: false, errors: takeErrors()) }
        return Answer(ok: true, difference: difference)
    }
    guard let image = af_test_vips_open(String(parts[1])) else { return Answer(ok: false, errors: takeErrors()) }
    defer { g_object_unref(image) }
    switch parts[0] {
    case "avg":
        var average = 0.0
        let ok = af_test_vips_avg(image, &average) == 0
        return Answer(ok: ok, errors: takeErrors())
    case "header":
        var loader: UnsafePointer<CChar>?
        var orientation: Int32 = 1
        if vips_image_get_typeof(image, "orientation") != 0 { vips_image_get_int(image, "orientation", &orientation) }
        let found = vips_image_get_typeof(image, "vips-loader") != 0 && vips_image_get_string(image, "vips-loader", &loader) == 0
        return Answer(ok: true, errors: takeErrors(), loader: found ? loader.map { String(cString: $0) } : nil,
                      width: Int(vips_image_get_width(image)), height: Int(vips_image_get_height(image)),
                      orientation: Int(orientation))
    default:
        return Answer(ok: false, errors: "media-check: unknown request \(parts[0])")
    }
}

let encoder = JSONEncoder()
while let line = readLine(strippingNewline: true) {
    var data = (try? encoder.encode(answer(Substring(line)))) ?? Data(#"{"ok":false,"errors":"media-check: unencodable answer"}"#.utf8)
    data.append(0x0A)
    FileHandle.standardOutput.write(data)
}
