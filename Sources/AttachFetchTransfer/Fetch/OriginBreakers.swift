import Foundation

/// One circuit breaker per origin host: after `failures` failures in a row the host is left
/// alone for `cooldown`, then one request probes it.
///
/// A host that answers is not dead: a CDN with some cold objects answers most requests while
/// others stall. So a timeout counts only when the host has answered nothing within
/// `answerWindow`; connection failures, refusals, TLS failures and 5xx answers always count.
///
/// The states, as in resilience4j and Envoy's outlier ejection:
/// - **closed**: requests go; a failure (connect failure or refusal, timeout, TLS failure, 5xx
///   answer) counts, anything else resets the count and is the host's latest answer;
/// - **open**: new requests end at once (`originUnavailable`); those already waiting end too
///   when the host refused the connection or has answered nothing within `answerWindow`
///   (`endsWaiting`), and are tried otherwise; outcomes of requests that were running when it
///   opened are ignored;
/// - **half-open**, after the cool-down: the next request is the probe, the only one the queue
///   lets run for the host; its success closes the breaker, its failure opens it again.
///
/// A pure state machine: no lock, no system call, time passed in. The engine keeps it behind
/// its lock, beside the queue, and carries out what its answers say after letting go.
///
/// It remembers at most `maxHosts` hosts (10,000, the transfer queue's bound on what it knows
/// of hosts), so that a campaign over many dead hosts cannot grow it without bound. A new host
/// past that makes room by forgetting the least useful first: closed breakers (a count of
/// failures) and open ones whose cool-down has ended, every one of them at once; then, while
/// more than nine tenths of the bound are still open, those whose cool-down ends soonest.
/// Forgetting that many at a time pays for the sweep over the map (O(1) amortised per new
/// host). Half-open breakers are kept: the queue holds their host to one transfer until the
/// probe's outcome comes back, which needs them (there are no more of them than probes running).
struct OriginBreakers {
    /// What `admit` says of a new request.
    enum Admission: Equatable {
        /// Go (through the queue as usual).
        case go
        /// Go, as the probe of a host whose cool-down is over: the queue lets one run at a time.
        case probe
        /// End at once with this reason (`originUnavailable`).
        case refuse(Reason)
    }

    /// What `record` changed.
    enum Change: Equatable {
        case none
        /// The breaker opened: requests waiting for the host end with this reason.
        case opened(Reason)
        /// The probe succeeded: the host is back to normal.
        case closed
    }

    private enum State {
        case closed(failures: Int, kinds: Set<String>, lastAnswer: ContinuousClock.Instant?)
        case open(until: ContinuousClock.Instant, reason: Reason, endsWaiting: Bool)
        case halfOpen
    }

    /// Hosts remembered at most by default.
    static let maxHosts = 10_000
    /// How long an answer from a host keeps its timeouts from counting: three stall timeouts
    /// (the default `stall` is 3 s), so that a host whose every request now stalls is still
    /// found dead within a batch.
    static let answerWindow: Duration = .seconds(10)
    /// The failure a timeout is described as (`OriginFailure.describe`).
    static let timedOut = "timed out"
    /// The failure that means nobody listens: waiting requests would be refused too.
    static let refused = "refused the connection"

    package let failures: Int
    package let cooldown: Duration
    /// Hosts remembered at most (see the type's comment).
    let maxHosts: Int
    private var states: [String: State] = [:]
    /// Transitions since start, by the state entered: "open", "half_open", "closed".
    package private(set) var transitions: [String: Int] = [:]

    init(failures: Int, cooldown: Duration, maxHosts: Int = OriginBreakers.maxHosts) {
        self.failures = failures
        self.cooldown = cooldown
        self.maxHosts = max(1, maxHosts)
    }

    /// Hosts remembered now (closed ones with failures counted or an answer, open and half-open ones).
    var hostsRemembered: Int { states.count }

    /// Hosts whose breaker is open at `now` (its cool-down not ended) or half-open.
    package func openHosts(now: ContinuousClock.Instant) -> Int {
        states.values.reduce(0) { count, state in
            switch state {
            case .closed: return count
            case .open(let until, _, _): return until > now ? count + 1 : count
            case .halfOpen: return count + 1
            }
        }
    }

    /// Whether the requests waiting for `host` end now that its breaker opened (`Change.opened`):
    /// it refused the connection, or answered nothing within `answerWindow`.
    package func endsWaiting(_ host: String) -> Bool {
        guard case .open(_, _, let ends) = states[host] else { return false }
        return ends
    }

    package mutating func admit(_ host: String, now: ContinuousClock.Instant) -> Admission {
        guard case .open(let until, let reason, _) = states[host] else { return .go }
        guard now >= until else { return .refuse(reason) }
        states[host] = .halfOpen
        transitions["half_open", default: 0] += 1
        return .probe
    }

    /// The outcome of a request to `host`: `failure` describes an origin failure ("timed out",
    /// "answered HTTP 503", ...), nil is anything else. `wall` is the wall-clock time now, for
    /// the message that says until when the host is left alone.
    package mutating func record(_ host: String, failure: String?, now: ContinuousClock.Instant, wall: Date) -> Change {
        // A host never seen is closed with no failures and no answer.
        switch states[host] ?? .closed(failures: 0, kinds: [], lastAnswer: nil) {
        case .open:
            return .none
        case .halfOpen:
            guard let failure else {
                states[host] = .closed(failures: 0, kinds: [], lastAnswer: now)
                transitions["closed", default: 0] += 1
                return .closed
            }
            return open(host, message: "the probe of \(Self.name(of: host)) after its cool-down \(failure)", endsWaiting: true, now: now, wall: wall)
        case .closed(let count, var kinds, let lastAnswer):
            let answeredLately = lastAnswer.map { now - $0 < Self.answerWindow } ?? false
            if states[host] == nil { makeRoom(now: now) }
            guard let failure else {
                states[host] = .closed(failures: 0, kinds: [], lastAnswer: now)
                return .none
            }
            // A stall from a host that answers is that object's, not the host's.
            if failure == Self.timedOut && answeredLately { return .none }
            kinds.insert(failure)
            guard count + 1 >= failures else {
                states[host] = .closed(failures: count + 1, kinds: kinds, lastAnswer: lastAnswer)
                return .none
            }
            let what = kinds.count == 1 ? "\(failures == 1 ? "a request" : "\(failures) requests") to \(Self.name(of: host)) \(failure)\(failures == 1 ? "" : " in a row")"
                : "\(failures) requests to \(Self.name(of: host)) failed in a row (the last \(failure))"
            return open(host, message: what, endsWaiting: failure == Self.refused || !answeredLately, now: now, wall: wall)
        }
    }

    private mutating func open(_ host: String, message: String, endsWaiting: Bool, now: ContinuousClock.Instant, wall: Date) -> Change {
        let reopen = wall.addingTimeInterval(Double(cooldown.milliseconds) / 1000)
        let reason = Reason(code: .originUnavailable, message: "\(message); not contacted again until \(Self.clockTime(reopen))")
        states[host] = .open(until: now + cooldown, reason: reason, endsWaiting: endsWaiting)
        transitions["open", default: 0] += 1
        return .opened(reason)
    }

    /// Room for one more host (see the type's comment).
    private mutating func makeRoom(now: ContinuousClock.Instant) {
        guard states.count >= maxHosts else { return }
        states = states.filter { _, state in
            switch state {
            case .closed: return false
            case .open(let until, _, _): return until > now
            case .halfOpen: return true
            }
        }
        let keep = maxHosts - max(1, maxHosts / 10)
        guard states.count > keep else { return }
        let soonest = states.compactMap { host, state -> (host: String, until: ContinuousClock.Instant)? in
            guard case .open(let until, _, _) = state else { return nil }
            return (host, until)
        }.sorted { $0.until < $1.until }
        for entry in soonest.prefix(states.count - keep) { states[entry.host] = nil }
    }

    /// The host as people write it: the origin without its scheme.
    package static func name(of origin: String) -> String {
        origin.range(of: "://").map { String(origin[$0.upperBound...]) } ?? origin
    }

    /// HH:MM:SS UTC.
    private static func clockTime(_ date: Date) -> String {
        let seconds = Int(date.timeIntervalSince1970.rounded(.up)) % 86_400
        let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(two(h)):\(two(m)):\(two(s)) UTC"
    }
}

/// What counts against an origin's circuit breaker, in the words its message uses: connect
/// failures and refusals, timeouts, TLS failures and 5xx answers. Anything else (a 404, media
/// refused, the batch's deadline) says nothing about the origin's health.
enum OriginFailure {
    /// The codes that count (`httpStatus` only for a 5xx), and those that never do
    /// (`ReasonCode.Contract.countsAgainstOrigin`).
    package static let counted = Set(ReasonCode.contracts.filter(\.countsAgainstOrigin).map(\.code))
    static let neverCounted = Set(ReasonCode.contracts.filter { !$0.countsAgainstOrigin }.map(\.code))

    /// `osError` is the connect call's errno (CURLINFO_OS_ERRNO), which tells a refusal apart.
    static func describe(_ failure: Reason?, status: Int, osError: Int = 0) -> String? {
        guard let failure, counted.contains(failure.code) else { return nil }
        switch failure.code {
        case .connectFailed:
            return osError == Int(ECONNREFUSED) ? OriginBreakers.refused : "could not be connected to"
        case .timeout: return OriginBreakers.timedOut
        case .tlsFailed: return "failed the TLS handshake"
        case .httpStatus where status >= 500: return "answered HTTP \(status)"
        default: return nil
        }
    }
}
