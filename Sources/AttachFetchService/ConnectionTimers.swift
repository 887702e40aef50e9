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
