import Foundation
#if canImport(Glibc)
import Glibc
#endif

public struct ServerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A parsed request head. Bodies are not read (the pipeline only sends GET).
public struct HTTPRequest: Sendable {
    public let method: String
    /// The request target as sent, e.g. `/media/photo.jpg?type=text/plain`.
    public let target: String
    public let path: String
    public let query: [String: String]
    public let headers: [String: String]
}

/// One accepted connection. Handlers write a response with `respond` or by parts.
public final class HTTPConnection: @unchecked Sendable {
    // @unchecked Sendable: used only by the one thread that serves this connection.
    let fd: Int32
    unowned let server: LoopbackHTTPServer
    private var buffer: [UInt8] = []
    /// Set when the response cannot be followed by another on this connection.
    public var mustClose = false

    init(fd: Int32, server: LoopbackHTTPServer) {
        self.fd = fd
        self.server = server
    }

    public var serverForCounting: LoopbackHTTPServer { server }

    func readRequest() -> HTTPRequest? {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = headEnd() {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                var lines = head.components(separatedBy: "\r\n")
                let parts = lines.removeFirst().split(separator: " ")
                guard parts.count >= 2 else { return nil }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let target = String(parts[1])
                let pieces = target.split(separator: "?", maxSplits: 1)
                var query: [String: String] = [:]
                if pieces.count == 2 {
                    for pair in pieces[1].split(separator: "&") {
                        let kv = pair.split(separator: "=", maxSplits: 1)
                        let key = String(kv[0]).removingPercentEncoding ?? String(kv[0])
                        let value = kv.count == 2 ? (String(kv[1]).removingPercentEncoding ?? String(kv[1])) : ""
                        query[key] = value
                    }
                }
                if headers["connection"]?.lowercased() == "close" { mustClose = true }
                return HTTPRequest(method: String(parts[0]), target: target, path: String(pieces.first ?? ""),
                                   query: query, headers: headers)
            }
            let received = recv(fd, &chunk, chunk.count, 0)
            if received <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<received])
            if buffer.count > 64 * 1024 { return nil }
        }
    }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }

    /// Sends raw bytes; returns false once the peer has gone. Never raises SIGPIPE.
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if sent < 0 {
                if errno == EINTR { continue }
                mustClose = true
                return false
            }
            offset += sent
        }
        return true
    }

    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { send($0) } }

    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Writes a status line and headers. `contentLength` nil means no length: the body ends
    /// when the connection closes.
    @discardableResult
    public func sendHead(status: Int, reason: String = "OK", contentType: String? = nil, contentLength: Int?,
                         extraHeaders: [(String, String)] = []) -> Bool {
        var head = "HTTP/1.1 \(status) \(reason)\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if let contentLength {
            head += "Content-Length: \(contentLength)\r\n"
        } else {
            head += "Connection: close\r\n"
            mustClose = true
        }
        for (name, value) in extraHeaders { head += "\(name): \(value)\r\n" }
        return send(head + "\r\n")
    }

    /// A whole response with a body.
    public func respond(status: Int, reason: String = "OK", contentType: String? = nil, body: [UInt8],
                        extraHeaders: [(String, String)] = []) {
        guard sendHead(status: status, reason: reason, contentType: contentType, contentLength: body.count,
                       extraHeaders: extraHeaders) else { return }
        send(body)
    }

    /// Makes the kernel's send buffer small, so that bytes counted as sent are close to bytes
    /// the client accepted (the kernel doubles the value given).
    public func useSmallSendBuffer(_ bytes: Int32 = 32 * 1024) {
        var size = bytes
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Waits up to `seconds`; returns false as soon as the peer closes the connection (or the
    /// server shuts down), true when the time passed with the peer still there.
    public func sleepUnlessClosed(seconds: Double) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return true }
            let ready = poll(&poller, 1, Int32(remaining * 1000))
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { return true }
            // Readable: either more request bytes (ignored) or end of stream.
            var byte: UInt8 = 0
            if recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) <= 0 {
                mustClose = true
                return false
            }
        }
    }

    /// Makes the coming close send a TCP reset instead of an orderly FIN.
    public func resetOnClose() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        mustClose = true
    }

    /// Blocks until the peer closes the connection (or the server shuts down).
    public func waitForPeerToClose() {
        var byte: UInt8 = 0
        while recv(fd, &byte, 1, 0) > 0 {}
        mustClose = true
    }
}
