import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The routes the tests, the demo and the benchmarks use, over a directory of media files.
///
/// - `/media/NAME` — the file. `?type=T` sets Content-Type (default: from the extension);
///   `?length=none` sends no Content-Length; `?tag=X` counts body bytes sent under X;
///   `?encoding=E` adds `Content-Encoding: E` (the bytes are sent as they are on disk);
///   `?chunk=N` sends the body in writes of N bytes, a few milliseconds apart (a server that
///   trickles), instead of one write.
/// - `/status/CODE` — that status with a small HTML body.
/// - `/redirect/N/REST` — a chain of N redirects ending at `/REST`.
/// - `/redirect-to?url=U` — one redirect to U (any scheme).
/// - `/synth/NAME?bytes=N` — the first bytes of file NAME padded with zeros to N bytes
///   (a large body that sniffs as NAME's type); `length=none` or `length=K` to omit or lie
///   about Content-Length; `tag=X` counts bytes sent. Uses a small send buffer so that the
///   count is close to what the client accepted.
/// - `/stall/NAME` — headers and the first 1 KiB of NAME, then nothing until the client
///   gives up.
///
/// Faults, for the time-contract tests (`?name=FILE` picks the media, default photo.jpg):
/// - `/fault/silent` — reads the request and never answers.
/// - `/fault/drip` — headers, then one body byte per second, forever.
/// - `/fault/endless` — no Content-Length and a body that never ends (at full speed).
/// - `/fault/long-length` — Content-Length 1000 bytes longer than the body, then close.
/// - `/fault/short-length` — Content-Length half the body, then the whole body.
/// - `/fault/reset` — half the body, then a TCP reset.
/// - `/fault/redirect-loop` — a redirect to itself.
/// - `/fault/slow-headers` — the status line, then one header line per second, forever.
/// - `/fault/huge-headers` — 200 KiB of header lines before the body.
public struct MediaRoutes: Sendable {
    public let directory: String

    public init(directory: String) { self.directory = directory }

    public static let contentTypes: [String: String] = [
        "jpg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
        "heic": "image/heic", "mp3": "audio/mpeg", "wav": "audio/wav", "aiff": "audio/aiff",
        "m4a": "audio/mp4", "mp4": "video/mp4", "mpg": "video/mpeg", "avi": "video/x-msvideo",
        "pdf": "application/pdf", "html": "text/html",
    ]

    public func handle(_ request: HTTPRequest, _ connection: HTTPConnection) {
        let components = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let route = components.first else { return notFound(connection) }
        switch route {
        case "media" where components.count == 2:
            serveFile(components[1], request, connection)
        case "status" where components.count == 2:
            let code = Int(components[1]) ?? 500
            connection.respond(status: code, reason: "Status", contentType: "text/html",
                               body: Array("<html><body>status \(code)</body></html>".utf8))
        case "redirect" where components.count >= 3:
            let remaining = Int(components[1]) ?? 0
            let rest = components[2...].joined(separator: "/")
            let query = request.target.contains("?") ? "?" + request.target.split(separator: "?", maxSplits: 1)[1] : ""
            let location = remaining <= 1 ? "/\(rest)\(query)" : "/redirect/\(remaining - 1)/\(rest)\(query)"
            connection.respond(status: 302, reason: "Found", body: [], extraHeaders: [("Location", location)])
        case "redirect-to":
            connection.respond(status: 302, reason: "Found", body: [],
                               extraHeaders: [("Location", request.query["url"] ?? "/")])
        case "flaky" where components.count >= 4:
            // /flaky/STATUS/K/rest: the first K requests for this target answer STATUS (with
            // `retryAfter` as Retry-After); later ones are answered as /rest would be.
            let key = "flaky \(request.target)"
            let seen = connection.serverForCounting.counter(key)
            connection.serverForCounting.count(key, 1)
            if seen < Int(components[2]) ?? 1 {
                let retry = request.query["retryAfter"].map { [("Retry-After", $0)] } ?? []
                connection.respond(status: Int(components[1]) ?? 503, reason: "Flaky", contentType: "text/html",
                                   body: Array("<html><body>try again</body></html>".utf8), extraHeaders: retry)
            } else {
                handle(request.forwarded(to: "/" + components[3...].joined(separator: "/")), connection)
            }
        case "synth" where components.count == 2:
            synthesise(components[1], request, connection)
        case "fault" where components.count == 2:
            fault(components[1], request, connection)
        case "stall" where components.count == 2:
            guard let data = readMedia("\(directory)/\(components[1])") else {
                return notFound(connection)
            }
            connection.sendHead(status: 200, contentType: type(of: components[1]), contentLength: data.count)
            connection.send(Array(data.prefix(1024)))
            connection.waitForPeerToClose()
        default:
            notFound(connection)
        }
    }

    private func type(of name: String) -> String {
        Self.contentTypes[(name as NSString).pathExtension.lowercased()] ?? "application/octet-stream"
    }

    private func notFound(_ connection: HTTPConnection) {
        connection.respond(status: 404, reason: "Not Found", contentType: "text/html",
                           body: Array("<html><body>not found</body></html>".utf8))
    }

    private func serveFile(_ name: String, _ request: HTTPRequest, _ connection: HTTPConnection) {
        guard !name.contains(".."), let data = readMedia("\(directory)/\(name)") else {
            return notFound(connection)
        }
        // A far or busy origin: the answer comes this many milliseconds after the request.
        if let delay = request.query["delayMs"].flatMap(Int.init), delay > 0 { usleep(useconds_t(delay * 1000)) }
        let contentType = request.query["type"] ?? type(of: name)
        let length: Int? = request.query["length"] == "none" ? nil : data.count
        let encoding = request.query["encoding"].map { [("Content-Encoding", $0)] } ?? []
        // A range asked for is sent alone (the device library asks for ranges; the pipeline never does).
        if let range = request.byteRange(ofLength: data.count) {
            return connection.respond(status: 206, reason: "Partial Content", contentType: contentType, body: Array(data[range]),
                                      extraHeaders: [("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(data.count)")])
        }
        guard connection.sendHead(status: 200, contentType: contentType, contentLength: length,
                                  extraHeaders: encoding) else { return }
        var ok = true
        if let chunk = request.query["chunk"].flatMap(Int.init), chunk > 0 {
            connection.useSmallSendBuffer()
            var sent = 0
            while ok && sent < data.count {
                let end = min(data.count, sent + chunk)
                ok = data[sent..<end].withUnsafeBytes { connection.send($0) }
                sent = end
                usleep(2_000)
            }
        } else {
            ok = data.withUnsafeBytes { connection.send($0) }
        }
        if ok, let tag = request.query["tag"] { connection.serverForCounting.count(tag, data.count) }
    }

    private func synthesise(_ name: String, _ request: HTTPRequest, _ connection: HTTPConnection) {
        guard !name.contains(".."), let data = readMedia("\(directory)/\(name)"),
              let total = Int(request.query["bytes"] ?? "") else {
            return notFound(connection)
        }
        let declared: Int?
        switch request.query["length"] {
        case "none": declared = nil
        case let value?: declared = Int(value) ?? total
        case nil: declared = total
        }
        connection.useSmallSendBuffer()
        guard connection.sendHead(status: 200, contentType: request.query["type"] ?? type(of: name),
                                  contentLength: declared) else { return }
        let tag = request.query["tag"]
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let header = Array(data.prefix(min(total, 4096)))
        var sent = 0
        while sent < total {
            let count = min(chunk.count, total - sent)
            for index in 0..<count { chunk[index] = sent + index < header.count ? header[sent + index] : 0 }
            guard chunk.withUnsafeBytes({ connection.send(UnsafeRawBufferPointer(rebasing: $0[..<count])) }) else { break }
            sent += count
            if let tag { connection.serverForCounting.count(tag, count) }
        }
        if declared != total { connection.mustClose = true }
    }

    private func fault(_ behaviour: String, _ request: HTTPRequest, _ connection: HTTPConnection) {
        let name = request.query["name"] ?? "photo.jpg"
        guard !name.contains(".."), let data = readMedia("\(directory)/\(name)") else {
            return notFound(connection)
        }
        let bytes = [UInt8](data)
        let contentType = type(of: name)
        switch behaviour {
        case "silent":
            connection.waitForPeerToClose()
        case "drip":
            guard connection.sendHead(status: 200, contentType: contentType, contentLength: bytes.count) else { return }
            var index = 0
            while connection.send([bytes[index % bytes.count]]) && connection.sleepUnlessClosed(seconds: 1) { index += 1 }
            connection.mustClose = true
        case "endless":
            connection.useSmallSendBuffer()
            guard connection.sendHead(status: 200, contentType: contentType, contentLength: nil) else { return }
            guard connection.send(bytes) else { return }
            let zeros = [UInt8](repeating: 0, count: 16 * 1024)
            while connection.send(zeros) {}
        case "long-length":
            guard connection.sendHead(status: 200, contentType: contentType, contentLength: bytes.count + 1000) else { return }
            connection.send(bytes)
            connection.mustClose = true
        case "short-length":
            // "Connection: close", so that the excess bytes cannot poison a reused connection.
            guard connection.sendHead(status: 200, contentType: contentType, contentLength: bytes.count / 2,
                                      extraHeaders: [("Connection", "close")]) else { return }
            connection.send(bytes)
            connection.mustClose = true
        case "reset":
            guard connection.sendHead(status: 200, contentType: contentType, contentLength: bytes.count) else { return }
            connection.send(Array(bytes.prefix(bytes.count / 2)))
            connection.resetOnClose()
        case "redirect-loop":
            connection.respond(status: 302, reason: "Found", body: [], extraHeaders: [("Location", request.target)])
        case "slow-headers":
            guard connection.send("HTTP/1.1 200 OK\r\n") else { return }
            var line = 0
            while connection.sleepUnlessClosed(seconds: 1) && connection.send("X-Slow-\(line): \(line)\r\n") { line += 1 }
            connection.mustClose = true
        case "huge-headers":
            let filler = (0..<2000).map { ("X-Filler-\($0)", String(repeating: "a", count: 90)) }
            guard connection.sendHead(status: 200, contentType: contentType, contentLength: bytes.count,
                                      extraHeaders: filler) else { return }
            connection.send(bytes)
        default:
            notFound(connection)
        }
    }
}

/// Reads a whole file with plain POSIX calls. (FoundationEssentials' `contents(atPath:)` was
/// seen by LeakSanitizer to leak a 4 KiB buffer per empty file read.)
func readMedia(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let count = read(fd, &chunk, chunk.count)
        if count < 0 && errno == EINTR { continue }
        if count < 0 { return nil }
        if count == 0 { return bytes }
        bytes.append(contentsOf: chunk[..<count])
    }
}
