import CTestSupport
import CVips
import Foundation

/// The corpus suite's independent libvips check: one process per batch of files, where a
/// `vips` and a `vipsheader` process per file each spent about 40 ms starting. It answers what
/// those commands answer, with libvips' own defaults (every loader; none of attach-fetch's
/// set-up), one request per line on standard input and one JSON line per answer on standard
/// output:
/// - `avg NAME`: does `vips avg NAME` succeed (NAME may carry load options, as in
///   `file.png[fail_on=error]`), and libvips' error text when it does not;
/// - `header FILE`: `vipsheader -a FILE`'s loader, width, height and EXIF orientation.
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
}

guard vips_init(CommandLine.arguments[0]) == 0 else {
    FileHandle.standardError.write(Data("vips-check: vips_init failed\n".utf8))
    exit(2)
}
vips_concurrency_set(1)
vips_cache_set_max(0)

/// libvips' error text since the last request, cleared for the next.
func takeErrors() -> String {
    guard let copy = vips_error_buffer_copy() else { return "" }
    defer { g_free(copy) }
    return String(cString: copy)
}

func answer(_ request: Substring) -> Answer {
    vips_error_clear()
    let parts = request.split(separator: "\t", maxSplits: 1)
    guard parts.count == 2 else { return Answer(ok: false, errors: "vips-check: expected `avg NAME` or `header FILE`") }
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
        return Answer(ok: false, errors: "vips-check: unknown request \(parts[0])")
    }
}

let encoder = JSONEncoder()
while let line = readLine(strippingNewline: true) {
    var data = (try? encoder.encode(answer(Substring(line)))) ?? Data(#"{"ok":false,"errors":"vips-check: unencodable answer"}"#.utf8)
    data.append(0x0A)
    FileHandle.standardOutput.write(data)
}
