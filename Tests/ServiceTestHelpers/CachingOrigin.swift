import Foundation
import LoopbackHTTPServer
import TestHelpers

/// A loopback origin for the fan-out tests: serves TestMedia (or another directory) under
/// `/c/<name>` with the caching headers the query asks for, answers conditional requests with
/// 304 when they match, and counts what it answered.
///
/// Query: `cc` (Cache-Control, repeatable as `cc2`), `expires` ("past", "garbage", "in:<s>"
/// or "twice"), `etag`, `lm=1` (a fixed Last-Modified), `status` (answer that status),
/// `delay` (milliseconds before answering).
package final class CachingOrigin: Sendable {
    package static let lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"
    package let server: LoopbackHTTPServer

    package init(directory: String = testMediaDirectory) throws {
        server = try LoopbackHTTPServer { request, connection in
            CachingOrigin.handle(request, connection, directory: directory)
        }
    }

    package func url(_ name: String, _ query: String = "") -> String {
        "\(server.baseURL)/c/\(name)" + (query.isEmpty ? "" : "?\(query)")
    }

    /// Requests that reached the origin for `name` (any query), 200s and 304s alike.
    package func requests(_ name: String) -> Int { server.requestLog.filter { $0.hasPrefix("/c/\(name)") }.count }
    /// Full bodies sent for `name`.
    package func bodies(_ name: String) -> Int { server.counter("200:\(name)") }
    package func notModified(_ name: String) -> Int { server.counter("304:\(name)") }

    package func shutdown() { server.shutdown() }

    private static func handle(_ request: HTTPRequest, _ connection: HTTPConnection, directory: String) {
        let name = String(request.path.dropFirst("/c/".count))
        if let delay = request.query["delay"].flatMap(Double.init) {
            guard connection.sleepUnlessClosed(seconds: delay / 1000) else { return }
        }
        var headers: [(String, String)] = [("Date", httpDate(Date()))]
        for key in ["cc", "cc2"] { if let value = request.query[key] { headers.append(("Cache-Control", value)) } }
        switch request.query["expires"] {
        case "past"?: headers.append(("Expires", httpDate(Date(timeIntervalSinceNow: -60))))
        case "garbage"?: headers.append(("Expires", "0"))
        case "twice"?:
            headers.append(("Expires", httpDate(Date(timeIntervalSinceNow: 60))))
            headers.append(("Expires", httpDate(Date(timeIntervalSinceNow: 120))))
        case let value? where value.hasPrefix("in:"):
            headers.append(("Expires", httpDate(Date(timeIntervalSinceNow: Double(value.dropFirst(3)) ?? 0))))
        default: break
        }
        let etag = request.query["etag"].map { "\"\($0)\"" }
        if let etag { headers.append(("ETag", etag)) }
        if request.query["lm"] != nil { headers.append(("Last-Modified", lastModified)) }
        if let status = request.query["status"].flatMap(Int.init) {
            connection.respond(status: status, reason: "Status", contentType: "text/plain", body: Array("no".utf8), extraHeaders: headers)
            return
        }
        let matches = (etag != nil && request.headers["if-none-match"] == etag)
            || (request.query["lm"] != nil && request.headers["if-modified-since"] == lastModified)
        if matches {
            connection.serverForCounting.count("304:\(name)", 1)
            connection.sendHead(status: 304, reason: "Not Modified", contentLength: 0, extraHeaders: headers)
            return
        }
        guard !name.contains(".."), let data = FileManager.default.contents(atPath: "\(directory)/\(name)") else {
            connection.respond(status: 404, reason: "Not Found", body: [])
            return
        }
        connection.serverForCounting.count("200:\(name)", 1)
        connection.respond(status: 200, contentType: "application/octet-stream", body: [UInt8](data), extraHeaders: headers)
    }

    package static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
