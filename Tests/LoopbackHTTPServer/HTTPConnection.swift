import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
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

    /// The same request for another path (the query and headers kept).
    public func forwarded(to path: String) -> HTTPRequest {
        HTTPRequest(method: method, target: path + (target.firstIndex(of: "?").map { String(target[$0...]) } ?? ""),
                    path: path, query: query, headers: headers)
    }

    /// The bytes of an object of `length` bytes that a `Range: bytes=first-last` (or
    /// `bytes=first-`) header asks for; nil without one, or for one that asks for none of them.
    public func byteRange(ofLength length: Int) -> Range<Int>? {
        guard let value = headers["range"], value.hasPrefix("bytes=") else { return nil }
        let bounds = value.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int(bounds[0]), first < length else { return nil }
        let last = bounds[1].isEmpty ? length - 1 : min(length - 1, Int(bounds[1]) ?? length - 1)
        return first <= last ? first..<(last + 1) : nil
    }

    private init(method: String, target: String, path: String, query: [String: String], headers: [String: String]) {
        (self.method, self.target, self.path, self.query, self.headers) = (method, target, path, query, headers)
    }

    init(_ head: HTTPRequestHead) {
        method = head.method.rawValue
        target = head.uri
        var headers: [String: String] = [:]
        for (name, value) in head.headers {
            headers[name.lowercased()] = value.trimmingCharacters(in: .whitespaces)
        }
        self.headers = headers
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
        self.query = query
        path = String(pieces.first ?? "")
    }
}

/// One accepted connection, as a handler sees it: calls block until done, as on a blocking
/// socket, so that a handler can stall, drip or wait for the client on purpose. Handlers write a
/// response with `respond` or by parts; bytes go out exactly as given (no HTTP encoder).
public final class HTTPConnection: Sendable {
    let channel: Channel
    let server: LoopbackHTTPServer
    private let closing = NIOLockedValueBox(false)
    /// Signalled once the write in flight is done. One at a time: queued writes go out together,
    /// and one larger than a small send buffer waits for the client's delayed ACK (40 ms) each
    /// time. Each handler ends with it signalled: a semaphore must not be dropped below its
    /// starting value.
    private let writeDone = DispatchSemaphore(value: 1)
    private let writeFailed = NIOLockedValueBox(false)

    /// Set when the response cannot be followed by another on this connection.
    public var mustClose: Bool {
        get { closing.withLockedValue { $0 } }
        set { closing.withLockedValue { $0 = newValue } }
    }

    init(channel: Channel, server: LoopbackHTTPServer) {
        self.channel = channel
        self.server = server
    }

    public var serverForCounting: LoopbackHTTPServer { server }

    /// Sends raw bytes; returns false once the peer has gone. It returns once the kernel has
    /// taken the previous write and this one is queued: the handler makes its next bytes while
    /// the event loop sends these, and what counts as sent stays within one write of what the
    /// client accepted (with a small send buffer).
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let buffer = ByteBuffer(bytes: bytes)
        writeDone.wait()
        guard channel.isActive, !writeFailed.withLockedValue({ $0 }) else {
            writeDone.signal()
            mustClose = true
            return false
        }
        let (channel, done, failed) = (channel, writeDone, writeFailed)
        // One hop to the event loop per write (waiting on the write's future from here would
        // take a second one).
        channel.eventLoop.execute {
            channel.writeAndFlush(buffer).whenComplete { result in
                if case .failure = result { failed.withLockedValue { $0 = true } }
                done.signal()
            }
        }
        return true
    }

    /// Waits for the last write, so that closing after the handler drops nothing.
    func finishWriting() {
        writeDone.wait()
        writeDone.signal()
        if writeFailed.withLockedValue({ $0 }) { mustClose = true }
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
        if contentLength == nil { mustClose = true }
        return send(Self.head(status: status, reason: reason, contentType: contentType, contentLength: contentLength,
                              extraHeaders: extraHeaders))
    }

    /// A whole response with a body, in one write.
    public func respond(status: Int, reason: String = "OK", contentType: String? = nil, body: [UInt8],
                        extraHeaders: [(String, String)] = []) {
        send(Array(Self.head(status: status, reason: reason, contentType: contentType, contentLength: body.count,
                             extraHeaders: extraHeaders).utf8) + body)
    }

    private static func head(status: Int, reason: String, contentType: String?, contentLength: Int?,
                             extraHeaders: [(String, String)]) -> String {
        var head = "HTTP/1.1 \(status) \(reason)\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if let contentLength {
            head += "Content-Length: \(contentLength)\r\n"
        } else {
            head += "Connection: close\r\n"
        }
        for (name, value) in extraHeaders { head += "\(name): \(value)\r\n" }
        return head + "\r\n"
    }

    /// Makes the kernel's send buffer small, so that bytes counted as sent are close to bytes
    /// the client accepted (the kernel doubles the value given).
    public func useSmallSendBuffer(_ bytes: Int32 = 32 * 1024) {
        _ = try? channel.setOption(.socketOption(.so_sndbuf), value: Int(bytes)).wait()
    }

    /// Waits up to `seconds`; returns false as soon as the peer closes the connection (or the
    /// server shuts down), true when the time passed with the peer still there.
    public func sleepUnlessClosed(seconds: Double) -> Bool {
        let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(max(0, seconds) * 1e9))) {}
        // Closing cancels the timer, which fails its future.
        channel.closeFuture.whenComplete { _ in timer.cancel() }
        do {
            try timer.futureResult.wait()
            return true
        } catch {
            mustClose = true
            return false
        }
    }

    /// Makes the coming close send a TCP reset instead of an orderly FIN.
    public func resetOnClose() {
        if let socket = channel as? SocketOptionProvider {
            _ = try? socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).wait()
        }
        mustClose = true
    }

    /// Blocks until the peer closes the connection (or the server shuts down). Whatever the
    /// peer sends meanwhile is read as further requests, answered after this one.
    public func waitForPeerToClose() {
        try? channel.closeFuture.wait()
        mustClose = true
    }
}
