/// How many transfers may start now: at twice the pace the decoders finish jobs (Little's law).
///
/// A transfer holds a socket and a temporary file and mostly waits on the network; what costs
/// CPU is decoding the body it brings. Starting transfers at twice the pace the decoders get
/// through their jobs keeps the decoders fed whatever the origin's distance, and by Little's
/// law the transfers in flight then number that pace times how long a transfer lasts:
/// - an origin 0 ms away (a transfer lasts about 2 ms; about 1,000 small images decoded a
///   second on 2 cores): about `burst`, the floor. Hundreds at once only contend for the file
///   system (performance.md, "Far origins");
/// - 100 ms away (200 ms on new connections): about 400;
/// - an origin that hangs: its transfers hold their slots, and the others still start at the
///   same pace beside them.
///
/// Up to `burst` transfers run whatever the pace, and up to `burst` more start at once when the
/// pace has been idle (a token bucket of that depth): an origin 0 ms away, whose transfers end
/// within a millisecond, is never held back by the pace, only kept to about `burst` at once
/// (the best fixed limit there, in the sweep). The pace is the decoders' threads over the
/// moving average of one job's busy time; until they have finished a job, one job is taken to
/// cost `assumedJobTime` per thread. At most `cap` (`maxConcurrentTransfers`) run at once. Not
/// adaptive (`--max-concurrency`, `TransferConcurrency.fixed`): up to `cap` start at once, at
/// any pace.
///
/// Engine thread only; pure arithmetic on given instants, no system call, so tests drive it
/// without sockets.
struct TransferPace {
    /// The most transfers at once (`maxConcurrentTransfers`).
    package let cap: Int
    /// False: up to `cap` at once, at any pace.
    package let adaptive: Bool
    /// Decoder threads (image and probe pools together), for the pace before any job ends.
    package let decoderThreads: Int

    static let burst = 16
    static let paceOverDecodes = 2.0
    static let assumedJobTime: Duration = .milliseconds(2)
    /// How soon jobs held back by the pace are looked at again: a few start together, rather
    /// than the engine waking for each.
    static let lookAgain: Duration = .milliseconds(5)

    private var tokens = Double(burst)
    private var refilledAt: ContinuousClock.Instant?

    init(cap: Int, adaptive: Bool, decoderThreads: Int = 2) {
        self.cap = cap
        self.adaptive = adaptive
        self.decoderThreads = max(1, decoderThreads)
    }

    /// Transfers started a second at `decodeRate` decoder jobs a second (nil: none finished
    /// yet); nil when not adaptive.
    package func pace(decodeRate: Double?) -> Double? {
        guard adaptive else { return nil }
        let rate = decodeRate.flatMap { $0 > 0 ? $0 : nil } ?? Double(decoderThreads) / Self.assumedJobTime.seconds
        return Self.paceOverDecodes * rate
    }

    /// Transfers that may start at `now`, with `running` running.
    mutating func startable(now: ContinuousClock.Instant, running: Int, decodeRate: Double?) -> Int {
        let room = max(0, cap - running)
        guard let pace = pace(decodeRate: decodeRate) else { return room }
        if let refilledAt { tokens = min(Double(Self.burst), tokens + pace * max(0, (now - refilledAt).seconds)) }
        refilledAt = now
        // The epsilon keeps a whole token that floating point left a hair short.
        return min(room, max(Self.burst - running, Int(tokens + 1e-9)))
    }

    /// `count` transfers started.
    package mutating func started(_ count: Int) {
        guard adaptive else { return }
        tokens = max(0, tokens - Double(count))
    }
}
