import Foundation
import Glibc

/// A small HTTP/1.1 server bound to a loopback address and an ephemeral port, one thread per
/// connection. It exists so that tests, the demo and the benchmarks drive real libcurl
/// transfers over real sockets, and can misbehave on purpose. It never binds anything but
/// 127.0.0.1 or ::1.
public final class LoopbackHTTPServer: @unchecked Sendable {
    // @unchecked Sendable: the mutable `stateValue` is only touched through `state(_:)`, under
    // `stateLock` (an NSLock: a pthread mutex, which ThreadSanitizer can see); the rest is
    // immutable.
    public typealias Handler = @Sendable (HTTPRequest, HTTPConnection) -> Void

    public enum Host: String, Sendable {
        case ipv4 = "127.0.0.1"
        case ipv6 = "::1"
    }

    public let port: Int
    public let host: Host
    private let listener: Int32
    private let handler: Handler
    private let stateLock = NSLock()
    private var stateValue = State()
    private let threads = DispatchGroup()

    private struct State {
        var connections: Set<Int32> = []
        var peakConnections = 0
        var acceptedConnections = 0
        var stopping = false
        var counters: [String: Int] = [:]
        var requests: [String] = []
        var requestHeaders: [[String: String]] = []
    }

    private func withState<Result>(_ body: (inout State) -> Result) -> Result {
        stateLock.lock()
        defer { stateLock.unlock() }
        return body(&stateValue)
    }

    /// Base URL, e.g. `http://127.0.0.1:40123`.
    public var baseURL: String { host == .ipv4 ? "http://127.0.0.1:\(port)" : "http://[::1]:\(port)" }

    public init(host: Host = .ipv4, handler: @escaping Handler) throws {
        let family = host == .ipv4 ? AF_INET : AF_INET6
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ServerError("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var bound: Int32
        if host == .ipv4 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        } else {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = 0
            address.sin6_addr = in6addr_loopback
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
        guard bound == 0, listen(fd, 512) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw ServerError("bind/listen on \(host.rawValue): \(message)")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        }
        let port = withUnsafePointer(to: &storage) { pointer -> UInt16 in
            host == .ipv4
                ? pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }
                : pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port }
        }
        self.port = Int(UInt16(bigEndian: port))
        self.host = host
        self.listener = fd
        self.handler = handler
        threads.enter()
        let thread = Thread { [self] in
            Thread.current.name = "lb-http-accept"
            self.acceptLoop()
            self.threads.leave()
        }
        thread.start()
    }

    deinit { shutdown() }

    /// Stops accepting, cuts every open connection and waits for all server threads.
    /// Safe to call more than once.
    public func shutdown() {
        let connections = withState { state -> Set<Int32>? in
            if state.stopping { return nil }
            state.stopping = true
            return state.connections
        }
        guard let connections else { return }
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        for fd in connections { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        threads.wait()
        close(listener)
    }

    /// Adds to a named counter (handlers count what they sent this way).
    public func count(_ name: String, _ amount: Int) {
        withState { $0.counters[name, default: 0] += amount }
    }

    /// The value of a named counter.
    public func counter(_ name: String) -> Int { withState { $0.counters[name] ?? 0 } }

    /// The most connections that were open at the same time.
    public var peakConnections: Int { withState { $0.peakConnections } }

    /// Connections accepted so far.
    public var acceptedConnections: Int { withState { $0.acceptedConnections } }

    /// The headers of every request so far (names lower-cased), in arrival order.
    public var requestHeaderLog: [[String: String]] { withState { $0.requestHeaders } }

    /// Every request target served so far, in arrival order.
    public var requestLog: [String] { withState { $0.requests } }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            // Headers and body go out in separate writes: without TCP_NODELAY, Nagle's
            // algorithm holds the body until the client's delayed ACK (about 40 ms).
            var noDelay: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
            let admitted = withState { state -> Bool in
                if state.stopping { return false }
                state.connections.insert(fd)
                state.acceptedConnections += 1
                state.peakConnections = max(state.peakConnections, state.connections.count)
                return true
            }
            guard admitted else {
                close(fd)
                return
            }
            threads.enter()
            let thread = Thread { [self] in
                Thread.current.name = "lb-http-conn"
                self.serve(fd)
                withState { _ = $0.connections.remove(fd) }
                close(fd)
                self.threads.leave()
            }
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        let connection = HTTPConnection(fd: fd, server: self)
        while let request = connection.readRequest() {
            withState {
                $0.requests.append(request.target)
                $0.requestHeaders.append(request.headers)
            }
            handler(request, connection)
            if connection.mustClose { return }
        }
    }
}

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
