import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

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
