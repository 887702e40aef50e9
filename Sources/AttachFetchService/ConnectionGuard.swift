import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Why a connection closed, as counted in `connections_closed_total{reason}`.
enum ConnectionCloseReason: String, CaseIterable, Sendable {
    /// No request in flight (or a request head left incomplete) for the idle timeout.
    case idle
    /// A request body that stalled for the body timeout (answered 408 first).
    case bodyTimeout
    /// Closed at once: `maxConnections` were already open.
    case limit
    /// Every other close: the client's own, one it asked for (`Connection: close`), or the
    /// service stopping.
    case client
}

/// What one connection's timers decide, as a value: events go in with the time they happened,
/// and each returns what to do. The channel handler runs the actions; this type makes no call
/// of its own, so every rule is tested without sockets or sleeping.
///
/// The rules:
/// - **idle**: while no request is in flight (a request head that is not complete does not
///   count: the HTTP decoder holds its bytes), the connection closes `idle` after it has been
///   idle this long;
/// - **body**: between a request's head and its end, each part must follow the last within the
///   body timeout; past it the body has timed out (the handler fails the body, so the route
///   answers 408), and the connection closes once that answer is written, or after `grace`;
/// - **in flight**: from a request's end to its response's end (a batch running, an NDJSON
///   stream between lines) no timer runs at all.
struct ConnectionTimers {
    typealias Instant = ContinuousClock.Instant

    enum Phase: Equatable {
        /// No request in flight, since then.
        case idle(since: Instant)
        /// A request's body is being read; its last part arrived then.
        case readingBody(lastPart: Instant)
        /// Requests read, responses still being written.
        case responding
        /// The body stalled then; the 408 is on its way.
        case bodyTimedOut(at: Instant)
        case closed
    }

    enum Action: Equatable {
        case none
        /// Fail the request body (so that the route answers 408).
        case failBody
        /// Close the connection, counted with this reason.
        case close(ConnectionCloseReason)
    }

    let idleTimeout: Duration
    let bodyTimeout: Duration
    /// How long a timed-out body's 408 may take before the connection is closed without it.
    let grace: Duration
    private(set) var phase: Phase
    /// Request heads read whose response has not ended.
    private var inFlight = 0

    init(idleTimeout: Duration, bodyTimeout: Duration, grace: Duration = .seconds(1), now: Instant) {
        self.idleTimeout = idleTimeout
        self.bodyTimeout = bodyTimeout
        self.grace = grace
        self.phase = .idle(since: now)
    }

    /// When the timer must next fire, or nil when no timer runs.
    var deadline: Instant? {
        switch phase {
        case .idle(let since): since + idleTimeout
        case .readingBody(let lastPart): lastPart + bodyTimeout
        case .bodyTimedOut(let at): at + grace
        case .responding, .closed: nil
        }
    }

    mutating func readHead(now: Instant) {
        guard phase != .closed else { return }
        inFlight += 1
        if case .bodyTimedOut = phase { return }
        phase = .readingBody(lastPart: now)
    }

    mutating func readBodyPart(now: Instant) {
        if case .readingBody = phase { phase = .readingBody(lastPart: now) }
    }

    mutating func readEnd() {
        if case .readingBody = phase { phase = .responding }
    }

    /// A response's last part is being written.
    mutating func wroteEnd(now: Instant) -> Action {
        inFlight = max(0, inFlight - 1)
        switch phase {
        case .bodyTimedOut:
            phase = .closed
            return .close(.bodyTimeout)
        case .responding where inFlight == 0:
            phase = .idle(since: now)
        default:
            break
        }
        return .none
    }

    /// The timer fired at `now`.
    mutating func timerFired(now: Instant) -> Action {
        guard let deadline, now >= deadline else { return .none }
        switch phase {
        case .idle:
            phase = .closed
            return .close(.idle)
        case .readingBody:
            phase = .bodyTimedOut(at: now)
            return .failBody
        case .bodyTimedOut:
            phase = .closed
            return .close(.bodyTimeout)
        case .responding, .closed:
            return .none
        }
    }

    /// The connection closed, whoever closed it: no timer runs any more.
    mutating func closed() {
        phase = .closed
    }
}

/// The error a stalled request body fails with; the service answers it with 408.
struct RequestBodyTimeout: Error {}

/// Counts the service's open connections against `maxConnections`, and reports opens and
/// closes to the metrics. Shared by every connection of one server.
///
/// Why not Hummingbird's `MaximumAvailableConnections`: at the limit it stops accepting, so a
/// new connection waits in the kernel's backlog, neither refused nor counted; here it is closed
/// at once and counted (`connections_closed_total{reason="limit"}`).
final class ConnectionGate: Sendable {
    let maxConnections: Int
    private let open = Atomic<Int>(0)
    private let metrics: ServiceMetrics

    init(maxConnections: Int, metrics: ServiceMetrics) {
        self.maxConnections = maxConnections
        self.metrics = metrics
    }

    /// A connection arrived: false (and counted as closed for `limit`) when `maxConnections`
    /// are already open.
    func admit() -> Bool {
        let now = open.add(1, ordering: .relaxed).newValue
        guard now <= maxConnections else {
            open.subtract(1, ordering: .relaxed)
            metrics.connectionClosed(.limit)
            return false
        }
        metrics.connectionsOpen(now)
        return true
    }

    /// An admitted connection closed.
    func release(_ reason: ConnectionCloseReason) {
        metrics.connectionsOpen(open.subtract(1, ordering: .relaxed).newValue)
        metrics.connectionClosed(reason)
    }

    var openNow: Int { open.load(ordering: .relaxed) }
}

/// One connection's guard: admits it under `maxConnections`, and runs `ConnectionTimers`'
/// decisions with one timer on the connection's event loop. It sits after the HTTP decoder, so
/// it sees whole request heads, body parts and ends, and the response parts going out.
///
/// Why not Hummingbird's `idleTimeout`: it closes without saying why (nothing to count), and a
/// stalled body is only closed at the idle timeout, with no 408. One machine owning all the
/// connection's timers keeps a connection from being under two clocks.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let gate: ConnectionGate
    private let idleTimeout: Duration
    private let bodyTimeout: Duration
    private var timers: ConnectionTimers?
    /// Counted in the gate (released when the connection closes).
    private var admitted = false
    /// Why it closed: set when this handler closes it; otherwise the client (or shutdown) did.
    private var reason: ConnectionCloseReason = .client
    private var timer: Scheduled<Void>?
    private var timerDeadline: ContinuousClock.Instant?

    init(gate: ConnectionGate, idleTimeout: Duration, bodyTimeout: Duration) {
        self.gate = gate
        self.idleTimeout = idleTimeout
        self.bodyTimeout = bodyTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { activate(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
    }

    func channelActive(context: ChannelHandlerContext) {
        activate(context)
        context.fireChannelActive()
    }

    private func activate(_ context: ChannelHandlerContext) {
        guard timers == nil else { return }
        timers = ConnectionTimers(idleTimeout: idleTimeout, bodyTimeout: bodyTimeout, now: .now)
        admitted = gate.admit()
        guard admitted else {
            timers?.closed()
            context.close(promise: nil)
            return
        }
        armTimer(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimer()
        timers?.closed()
        if admitted {
            admitted = false
            gate.release(reason)
        }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let now = ContinuousClock.now
        switch unwrapInboundIn(data) {
        case .head: timers?.readHead(now: now)
        case .body: timers?.readBodyPart(now: now)
        case .end: timers?.readEnd()
        }
        armTimer(context)
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data), let action = timers?.wroteEnd(now: .now) else {
            context.write(data, promise: promise)
            return
        }
        if case .close(let why) = action {
            reason = why
            context.writeAndFlush(data, promise: promise)
            context.close(promise: nil)
        } else {
            context.write(data, promise: promise)
            armTimer(context)
        }
    }

    /// Schedules the timer for the machine's deadline when none is set, or one is set for later.
    private func armTimer(_ context: ChannelHandlerContext) {
        guard let deadline = timers?.deadline else { return }
        if let timerDeadline, timerDeadline <= deadline { return }
        cancelTimer()
        timerDeadline = deadline
        let loop = context.eventLoop.assumeIsolatedUnsafeUnchecked()
        timer = loop.scheduleTask(in: .init(deadline - .now)) { [self] in
            timer = nil
            timerDeadline = nil
            run(timers?.timerFired(now: .now) ?? .none, context)
            armTimer(context)
        }
    }

    private func run(_ action: ConnectionTimers.Action, _ context: ChannelHandlerContext) {
        switch action {
        case .none: break
        case .failBody:
            // The body stream (and so the route reading it) fails with this error; the route
            // answers 408 and `write` closes the connection after it.
            context.fireErrorCaught(RequestBodyTimeout())
        case .close(let why):
            reason = why
            context.close(promise: nil)
        }
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
        timerDeadline = nil
    }
}

@available(*, unavailable)
extension ConnectionGuard: Sendable {}
