import AttachFetch
import Foundation
import HTTPTypes
import Hummingbird
#if canImport(Glibc)
import Glibc
#endif

/// The inspector: one HTML page with its stylesheet and script modules (this folder's
/// `index.html`, `inspector.css`, `inspector.js` and the `inspector-*.js` it imports, compiled
/// into the binary), served at `/` by the service and written as one self-contained file by the
/// CLI's `--format html`.
public enum InspectorPage {
    static let html = String(decoding: PackageResources.index_html, as: UTF8.self)
    static let css = String(decoding: PackageResources.inspector_css, as: UTF8.self)

    /// The script's ES modules, each served at `/<name>`: `inspector.js` is the entry the page
    /// loads, and it imports the others. Each comes after the modules it imports, the entry last.
    static let scripts: [(name: String, text: String)] = [
        ("inspector-constants.js", PackageResources.inspector_constants_js),
        ("inspector-state.js", PackageResources.inspector_state_js),
        ("inspector-format.js", PackageResources.inspector_format_js),
        ("inspector-dom.js", PackageResources.inspector_dom_js),
        ("inspector-api.js", PackageResources.inspector_api_js),
        ("inspector-payload.js", PackageResources.inspector_payload_js),
        ("inspector-verdict.js", PackageResources.inspector_verdict_js),
        ("inspector-images.js", PackageResources.inspector_images_js),
        ("inspector-platforms.js", PackageResources.inspector_platforms_js),
        ("inspector-waterfall.js", PackageResources.inspector_waterfall_js),
        ("inspector-card.js", PackageResources.inspector_card_js),
        ("inspector-lint.js", PackageResources.inspector_lint_js),
        ("inspector-result.js", PackageResources.inspector_result_js),
        ("inspector-service.js", PackageResources.inspector_service_js),
        ("inspector-report.js", PackageResources.inspector_report_js),
        ("inspector.js", PackageResources.inspector_js),
    ].map { ($0, String(decoding: $1, as: UTF8.self)) }

    /// The modules as one classic script, for the report: a page opened from a file cannot load
    /// modules. Each module's `import` statements are left out and its `export` keywords
    /// dropped; they share no top-level name, so one function scope holds them all.
    static let reportScript: String = {
        var lines = ["(function () {", "'use strict';"]
        for (_, text) in scripts {
            var inImport = false
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if inImport || line.hasPrefix("import ") {
                    inImport = !line.hasSuffix(";")
                    continue
                }
                lines.append(String(line.hasPrefix("export ") ? line.dropFirst("export ".count) : line))
            }
        }
        lines.append("}());")
        return lines.joined(separator: "\n")
    }()

    /// One file the service serves for the page, at `/<path>`.
    package struct File: Sendable {
        /// The path after `/` (empty for the page).
        package let path: String
        /// Its media type, without parameters.
        package let mediaType: String
        let text: String

        /// The OpenAPI operation of its GET (`inspectorPage`, `inspectorStylesheet`,
        /// `inspectorScript` and the module's name in capitals: `inspectorScriptVerdict`).
        package var operationID: String {
            switch mediaType {
            case "text/html": return "inspectorPage"
            case "text/css": return "inspectorStylesheet"
            default:
                let words = path.dropLast(".js".count).split(separator: "-").dropFirst()
                return "inspectorScript" + words.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
            }
        }
    }

    /// Every file the page is served as: the page, its stylesheet, then its modules in order.
    /// The route table (`Routes.inspector`), the router and openapi.json's paths (written by
    /// `openapi-document`) come from this list.
    package static let files = [File(path: "", mediaType: "text/html", text: html), File(path: "inspector.css", mediaType: "text/css", text: css)]
        + scripts.map { File(path: $0.name, mediaType: "text/javascript", text: $0.text) }

    /// The lines of `index.html` the report replaces.
    static let stylesheetLine = #"<link rel="stylesheet" href="inspector.css">"#
    static let scriptLine = #"<script type="module" src="inspector.js"></script>"#
    static let dataMarker = "<!-- report-data -->"

    /// The headers of every inspector response. Images come from the page's own origin, `data:`
    /// URIs, and the public base when publishing; nothing else loads, no script is inline, and
    /// no other site may frame the page.
    static func headers(contentType: String, publicBase: String?) -> HTTPFields {
        let images = ["'self'", "data:"] + (publicBase.map { [Self.origin(of: $0)] } ?? [])
        return [
            .contentType: contentType,
            .contentSecurityPolicy: "default-src 'self'; img-src \(images.joined(separator: " ")); object-src 'none'; frame-ancestors 'none'",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
            .cacheControl: "no-cache",
        ]
    }

    /// A public base's scheme, host and port: what a CSP source names.
    static func origin(of base: String) -> String {
        guard let url = URL(string: base), let scheme = url.scheme, let host = url.host else { return base }
        return "\(scheme)://\(host)\(url.port.map { ":\($0)" } ?? "")"
    }

    /// What a report shows: a batch of URLs, or a push payload's media and lint.
    public enum ReportKind: String, Sendable {
        /// `attachments` for a batch of URLs, `payload` for a push payload.
        case attachments, payload
    }

    /// The report: the page with its stylesheet and script inlined and the result embedded as
    /// data, thumbnails and variants as `data:` URIs, so it opens anywhere without a network.
    /// - Parameters:
    ///   - result: the batch document as the service would answer it (JSON).
    ///   - payload: the push payload as given (JSON), for its titles and bodies.
    public static func report(kind: ReportKind, result: Data, payload: Data?,
                              descriptors: [AttachmentDescriptor]) throws(AttachFetchError) -> String {
        var images: [String: String] = [:]
        for descriptor in descriptors {
            let files = [descriptor.thumbnail?.file] + (descriptor.variants ?? [:]).values.map(\.file)
            for case let file? in files where images[file] == nil {
                if let data = FileManager.default.contents(atPath: file) {
                    images[file] = "data:\(MediaFiles.contentType(file));base64,\(data.base64EncodedString())"
                }
            }
        }
        let encoded: String
        do {
            let document = ReportData(kind: kind.rawValue, result: try JSONValue(json: result),
                                      payload: try payload.map(JSONValue.init(json:)) ?? .null, images: images,
                                      generated: ISO8601DateFormatter().string(from: Date()))
            encoded = try JSONWriter.string(document)
        } catch {
            throw .invalidConfiguration("the report's data cannot be written: \(error)")
        }
        // Inside a <script> element no "<" may start a tag or a comment: JSON strings take "\u003c".
        let data = encoded.replacingOccurrences(of: "<", with: "\\u003c")
        // Each marker of the template is replaced once, the script last: nothing inside what is
        // put in (the data, whose "<" is escaped; the stylesheet; the script) is ever replaced.
        var page = html
        for (marker, content) in [
            (dataMarker, #"<script type="application/json" id="report-data">"# + data + "</script>"),
            (stylesheetLine, "<style>\n\(css)\n</style>"),
            (scriptLine, "<script>\n\(reportScript.replacingOccurrences(of: "</script", with: "<\\/script"))\n</script>"),
        ] {
            guard let range = page.range(of: marker) else {
                throw .invalidConfiguration("the inspector page has no '\(marker)' line to fill")
            }
            page.replaceSubrange(range, with: content)
        }
        return page
    }
}

/// `GET /v1/files/<bucket>/<batch>/<name>`: a file of a batch this service made, while it is
/// retained (the inspector's thumbnails and variants when nothing is published). Each name must
/// be a plain name (letters, digits, `.`, `_`, `-`, not starting with a dot); every component
/// is opened under the service's own root without following symbolic links, directories for
/// the first two and a regular file for the last: nothing outside the batches is reachable.
struct BatchFileRoute: Sendable {
    let root: String

    func respond(components: [Substring], request: Request) throws(APIError) -> Response {
        let path = request.uri.path
        guard components.count == 3, components.allSatisfy(Self.isPlainName) else { throw APIError.notFound(path) }
        var directory = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        for component in components.prefix(2) {
            guard directory >= 0 else { throw APIError.notFound(path) }
            let next = openat(directory, String(component), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            close(directory)
            directory = next
        }
        guard directory >= 0 else { throw APIError.notFound(path) }
        let file = openat(directory, String(components[2]), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        close(directory)
        guard file >= 0 else { throw APIError.notFound(path) }
        return try MediaFiles.respond(opened: file, name: String(components[2]), path: path, request: request,
                                      cacheControl: "private, no-store", etag: nil)
    }

    static func isPlainName(_ name: Substring) -> Bool {
        guard let first = name.utf8.first, first != UInt8(ascii: "."), name.utf8.count <= 255 else { return false }
        return name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}

/// What the report page reads from its `report-data` element.
private struct ReportData: Encodable {
    var kind: String
    var result: JSONValue
    var payload: JSONValue
    var images: [String: String]
    var generated: String
}
