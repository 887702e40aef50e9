import Synchronization

/// What the engine reports, from any thread (the service's metrics).
extension TransferEngine {
    /// Transfers holding a slot now, and jobs waiting for one.
    package var inFlight: (running: Int, queued: Int) {
        (runningCount.load(ordering: .relaxed), shared.withLock { $0.queue.count })
    }

    /// Transfers a second the pace allows now, at the decoders' pace now; nil when the limit is fixed.
    package var transferPace: Int? {
        paceRule.pace(decodeRate: decodeRate()).map { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
    }

    /// Connections opened to origins since start, transfers that reused a kept-alive one, and the
    /// most bytes running transfers ever held in temporary files at once.
    package var connections: (opened: Int, reused: Int, peakInflightBytes: Int64) {
        (connectionsOpened.load(ordering: .relaxed), connectionsReused.load(ordering: .relaxed),
         peakInflightBytes.load(ordering: .relaxed))
    }

    /// Breaker transitions since start, by the state entered ("open", "half_open", "closed"), and
    /// the hosts whose breaker is open (its cool-down not ended by the pipeline's clock) or
    /// half-open now.
    package var breakers: (transitions: [String: Int], openHosts: Int) {
        let now = clock.now
        return shared.withLock { ($0.breakers.transitions, $0.breakers.openHosts(now: now)) }
    }
}
