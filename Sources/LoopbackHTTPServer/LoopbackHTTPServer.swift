import CAttachFetchShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif

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
    /// False: `requestLog` and `requestHeaderLog` stay empty. A server under long load (the leak
    /// test's 16,000 requests, a benchmark's origin) would otherwise grow by every request.
    private let keepsRequestLog: Bool

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

    public init(host: Host = .ipv4, keepsRequestLog: Bool = true, handler: @escaping Handler) throws {
        self.keepsRequestLog = keepsRequestLog
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
            // Named by the thread itself, as AttachFetch's `nameCurrentThread` explains.
            _ = af_prctl_set_name("lb-http-accept")
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
    /// Connections open right now.
    public var openConnections: Int { withState { $0.connections.count } }

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
                _ = af_prctl_set_name("lb-http-conn")
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
            if keepsRequestLog {
                withState {
                    $0.requests.append(request.target)
                    $0.requestHeaders.append(request.headers)
                }
            }
            handler(request, connection)
            if connection.mustClose { return }
        }
    }
}
