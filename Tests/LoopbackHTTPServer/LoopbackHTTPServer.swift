import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A small HTTP/1.1 server bound to a loopback address and an ephemeral port. It exists so that
/// tests, the demo and the benchmarks drive real libcurl transfers over real sockets, and can
/// misbehave on purpose. It never binds anything but 127.0.0.1 or ::1.
///
/// One event loop does the socket work; handlers run on a pool of threads of their own, because
/// they block on purpose (stalls, drips, waiting for the client to hang up). The server serves
/// until `shutdown()`: its listening channel keeps it alive until then.
public final class LoopbackHTTPServer: Sendable {
    public typealias Handler = @Sendable (HTTPRequest, HTTPConnection) -> Void

    public enum Host: String, Sendable {
        case ipv4 = "127.0.0.1"
        case ipv6 = "::1"
    }

    /// Handlers that may block at once. More wait for a free thread: the most any caller keeps
    /// blocked is 100 (DeadlineTests' hundred stalling connections).
    static let handlerThreadCount = 128

    public let port: Int
    public let host: Host
    let handler: Handler
    /// False: `requestLog` and `requestHeaderLog` stay empty. A server under long load (the leak
    /// test's 16,000 requests, a benchmark's origin) would otherwise grow by every request.
    let keepsRequestLog: Bool
    let handlerThreads: NIOThreadPool
    private let group: MultiThreadedEventLoopGroup
    private let listener: Channel
    private let state = NIOLockedValueBox(State())

    private struct State {
        var connections: [ObjectIdentifier: Channel] = [:]
        var peakConnections = 0
        var requestsInService = 0
        var peakRequestsInService = 0
        var acceptedConnections = 0
        var stopping = false
        var counters: [String: Int] = [:]
        var requests: [String] = []
        var requestHeaders: [[String: String]] = []
    }

    /// Base URL, e.g. `http://127.0.0.1:40123`.
    public var baseURL: String { host == .ipv4 ? "http://127.0.0.1:\(port)" : "http://[::1]:\(port)" }

    public init(host: Host = .ipv4, keepsRequestLog: Bool = true, handler: @escaping Handler) throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let handlerThreads = NIOThreadPool(numberOfThreads: Self.handlerThreadCount)
        handlerThreads.start()
        // Connections need the finished server; it is put here, and accepting turned on, once
        // `init` has set every property.
        let finished = NIOLockedValueBox<LoopbackHTTPServer?>(nil)
        // NIO's sockets are not close-on-exec. No child inherits them all the same: every process
        // this one starts closes the descriptors past stderr (Foundation's Process, the decoder
        // workers' spawn and fork).
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 512)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.autoRead, value: false)
            // Headers and body may go out in separate writes: without TCP_NODELAY, Nagle's
            // algorithm holds the body until the client's delayed ACK (about 40 ms).
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard let server = finished.withLockedValue({ $0 }) else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(HTTPRequestDecoder()), ConnectionHandler(server: server),
                    ])
                }
            }
        let listener: Channel
        do {
            listener = try bootstrap.bind(to: SocketAddress(ipAddress: host.rawValue, port: 0)).wait()
        } catch {
            try? handlerThreads.syncShutdownGracefully()
            try? group.syncShutdownGracefully()
            throw ServerError("bind/listen on \(host.rawValue): \(error)")
        }
        self.port = listener.localAddress?.port ?? 0
        self.host = host
        self.handler = handler
        self.keepsRequestLog = keepsRequestLog
        self.handlerThreads = handlerThreads
        self.group = group
        self.listener = listener
        finished.withLockedValue { $0 = self }
        do {
            try listener.setOption(.autoRead, value: true).wait()
        } catch {
            shutdown()
            throw ServerError("accepting on \(host.rawValue): \(error)")
        }
    }

    /// Stops accepting, cuts every open connection, and waits for every handler and the event
    /// loop to end. Safe to call more than once; never from a handler.
    public func shutdown() {
        let connections = state.withLockedValue { state -> [Channel]? in
            if state.stopping { return nil }
            state.stopping = true
            return Array(state.connections.values)
        }
        guard let connections else { return }
        try? listener.close().wait()
        // Closing wakes the handlers: their writes fail and their waits for the client end.
        for channel in connections { channel.close(promise: nil) }
        try? handlerThreads.syncShutdownGracefully()
        try? group.syncShutdownGracefully()
    }

    /// Adds to a named counter (handlers count what they sent this way).
    public func count(_ name: String, _ amount: Int) {
        state.withLockedValue { $0.counters[name, default: 0] += amount }
    }

    /// The value of a named counter.
    public func counter(_ name: String) -> Int { state.withLockedValue { $0.counters[name] ?? 0 } }

    /// The most connections that were open at the same time.
    public var peakConnections: Int { state.withLockedValue { $0.peakConnections } }
    /// The most requests being answered at the same time: from the handler's start to the end of
    /// its answer, an interval inside the client's transfer. Unlike `peakConnections` it never
    /// counts a connection the client has already closed: a close and the next connect can reach
    /// the event loop in one wakeup, in either order.
    public var peakRequestsInService: Int { state.withLockedValue { $0.peakRequestsInService } }
    /// Connections open right now.
    public var openConnections: Int { state.withLockedValue { $0.connections.count } }

    /// Connections accepted so far.
    public var acceptedConnections: Int { state.withLockedValue { $0.acceptedConnections } }

    /// The headers of every request so far (names lower-cased), in arrival order.
    public var requestHeaderLog: [[String: String]] { state.withLockedValue { $0.requestHeaders } }

    /// Every request target served so far, in arrival order.
    public var requestLog: [String] { state.withLockedValue { $0.requests } }

    /// Counts a new connection; false once the server is stopping (the caller closes it).
    func admit(_ channel: Channel) -> Bool {
        state.withLockedValue { state in
            if state.stopping { return false }
            state.connections[ObjectIdentifier(channel)] = channel
            state.acceptedConnections += 1
            state.peakConnections = max(state.peakConnections, state.connections.count)
            return true
        }
    }

    func release(_ channel: Channel) {
        state.withLockedValue { _ = $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Runs the handler for one request on a handler thread; the future says whether the
    /// connection must close afterwards (it fails if the server is shutting down).
    func serve(_ request: HTTPRequest, on connection: HTTPConnection, eventLoop: EventLoop) -> EventLoopFuture<Bool> {
        handlerThreads.runIfActive(eventLoop: eventLoop) { [self] in
            if keepsRequestLog {
                state.withLockedValue {
                    $0.requests.append(request.target)
                    $0.requestHeaders.append(request.headers)
                }
            }
            if request.headers["connection"]?.lowercased() == "close" { connection.mustClose = true }
            state.withLockedValue {
                $0.requestsInService += 1
                $0.peakRequestsInService = max($0.peakRequestsInService, $0.requestsInService)
            }
            handler(request, connection)
            connection.finishWriting()
            state.withLockedValue { $0.requestsInService -= 1 }
            return connection.mustClose
        }
    }
}
