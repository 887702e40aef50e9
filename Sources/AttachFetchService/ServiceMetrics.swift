import AttachFetch
import Prometheus
import Synchronization

/// The service's Prometheus metrics (names prefixed `attach_fetch_`), in a registry of its own
/// (no process-wide bootstrap, so that several services can run in one process).
final class ServiceMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let batchesInFlight: Gauge
    private let attachmentsInFlight: Gauge
    private let transfersRunning: Gauge
    private let transfersQueued: Gauge
    private let transferPace: Gauge
    private let originConnectionsOpened: Gauge
    private let originConnectionsReused: Gauge
    private let inflightBytesPeak: Gauge
    private let breakersOpen: Gauge
    private let decoderLandlockABI: Gauge, decoderSystemCallFilter: Gauge
    private let breakerTransitions: [String: Counter]
    /// Transitions already added to the counters (the pipeline reports totals).
    private let breakerTransitionsSeen = Locked<[String: Int]>([:])
    private let connectionsOpenNow: Gauge
    private let connectionsClosed: [ConnectionCloseReason: Counter]
    private let batchesNow = Atomic<Int>(0)
    private let attachmentsNow = Atomic<Int>(0)
    // Each label set's metrics, kept once made (see `Made`).
    private let requestCounters = Made<RequestLabels, Counter>()
    private let requestDurations = Made<String, DurationHistogram>()
    private let attachmentCounters = Made<AttachmentLabels, Counter>()
    private let cacheCounters = Made<String, Counter>()
    private let stageDurations = Made<String, DurationHistogram>()
    private let traceSpans = Made<String, Gauge>()

    // Label values as keys: no array or status string built per request to look one up.
    private struct RequestLabels: Hashable {
        var route: String
        var status: Int
    }

    private struct AttachmentLabels: Hashable {
        var status: String
        var reason: String
    }

    private static let secondsBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(25),
    ]

    init() {
        batchesInFlight = registry.makeGauge(descriptor: Self.name("batches_in_flight", "Batches being processed now"))
        attachmentsInFlight = registry.makeGauge(descriptor: Self.name("attachments_in_flight", "Attachments of batches being processed now"))
        let transfers = Self.name("transfers_in_flight", "Downloads running (holding a slot) and queued for one")
        transfersRunning = registry.makeGauge(descriptor: transfers, labels: [("state", "running")])
        transfersQueued = registry.makeGauge(descriptor: transfers, labels: [("state", "queued")])
        transferPace = registry.makeGauge(descriptor: Self.name("transfer_pace", "Downloads a second allowed to start now: twice the decoders' pace (0 with a fixed --max-concurrency)"))
        // Counts since the pipeline started, read from it when scraped: gauges set to them
        // (a Prometheus counter here could only be incremented).
        let origin = Self.name("origin_connections", "Transfers since start by their connection to the origin: new (opened) or reused (kept alive)")
        originConnectionsOpened = registry.makeGauge(descriptor: origin, labels: [("connection", "new")])
        originConnectionsReused = registry.makeGauge(descriptor: origin, labels: [("connection", "reused")])
        inflightBytesPeak = registry.makeGauge(descriptor: Self.name("transfer_inflight_bytes_peak", "Most bytes running transfers held in temporary files at once since start"))
        decoderLandlockABI = registry.makeGauge(descriptor: Self.name("decoder_landlock_abi", "The Landlock ABI every decoder worker is checked for before its first job; 0: none"))
        decoderSystemCallFilter = registry.makeGauge(descriptor: Self.name("decoder_system_call_filter", "1 when every decoder worker is checked for its seccomp filter before its first job"))
        breakersOpen = registry.makeGauge(descriptor: Self.name("origin_breakers_open", "Origin hosts whose circuit breaker is open or half-open now"))
        let transitions = Self.name("origin_breaker_transitions_total", "Circuit-breaker transitions, by the state entered (no host label: bounded cardinality)")
        var transitionCounters: [String: Counter] = [:]
        for state in ["open", "half_open", "closed"] {
            transitionCounters[state] = registry.makeCounter(descriptor: transitions, labels: [("to", state)])
        }
        breakerTransitions = transitionCounters
        connectionsOpenNow = registry.makeGauge(descriptor: Self.name("connections_open", "Client connections open now"))
        let closed = Self.name("connections_closed_total", "Client connections closed, by reason: idle, bodyTimeout, limit, client")
        var counters: [ConnectionCloseReason: Counter] = [:]
        for reason in ConnectionCloseReason.allCases {
            counters[reason] = registry.makeCounter(descriptor: closed, labels: [("reason", reason.rawValue)])
        }
        connectionsClosed = counters
    }

    /// How the decoders are confined: set once, when the pipeline starts.
    func decoders(_ confinement: DecoderConfinement) {
        decoderLandlockABI.set(Double(confinement.landlockABI))
        decoderSystemCallFilter.set(Double(confinement.systemCallFilter ? 1 : 0))
    }

    func connectionsOpen(_ count: Int) { connectionsOpenNow.set(Double(count)) }

    func connectionClosed(_ reason: ConnectionCloseReason) { connectionsClosed[reason]?.increment() }

    private static func name(_ metric: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "attach_fetch", metricName: metric, unitName: "", helpText: help)
    }

    func request(route: String, status: Int, duration: Duration) {
        requestCounters.get(RequestLabels(route: route, status: status)) {
            registry.makeCounter(descriptor: Self.name("requests_total", "HTTP requests by route and status"),
                                 labels: [("route", route), ("status", String(status))])
        }.increment()
        requestDurations.get(route) {
            registry.makeDurationHistogram(descriptor: Self.name("request_duration_seconds", "HTTP request duration"),
                                           labels: [("route", route)], buckets: Self.secondsBuckets)
        }.record(duration)
    }

    /// A batch starts (false when `maxBatches` are already in flight: the caller answers 503).
    func startBatch(attachments: Int, limit: Int) -> Bool {
        let now = batchesNow.add(1, ordering: .relaxed).newValue
        guard now <= limit else {
            batchesNow.subtract(1, ordering: .relaxed)
            return false
        }
        batchesInFlight.set(Double(now))
        attachmentsInFlight.set(Double(attachmentsNow.add(attachments, ordering: .relaxed).newValue))
        return true
    }

    func endBatch(attachments: Int) {
        batchesInFlight.set(Double(batchesNow.subtract(1, ordering: .relaxed).newValue))
        attachmentsInFlight.set(Double(attachmentsNow.subtract(attachments, ordering: .relaxed).newValue))
    }

    var batchesNowInFlight: Int { batchesNow.load(ordering: .relaxed) }

    /// What one finished attachment tells: its status and reason, where its result came from,
    /// its stages' durations, the bytes downloaded and the files published.
    func attachment(_ descriptor: AttachmentDescriptor) {
        let status = descriptor.status.rawValue, reason = descriptor.reason?.code.rawValue ?? "none"
        attachmentCounters.get(AttachmentLabels(status: status, reason: reason)) {
            registry.makeCounter(descriptor: Self.name("attachments_total", "Attachments by status and reason code"),
                                 labels: [("status", status), ("reason", reason)])
        }.increment()
        if let cache = descriptor.cache?.rawValue {
            cacheCounters.get(cache) {
                registry.makeCounter(descriptor: Self.name("cache_results_total", "Results by origin: miss, hit, revalidated, coalesced"),
                                     labels: [("result", cache)])
            }.increment()
        }
        let timings = descriptor.timings
        for (stage, milliseconds) in [("connect", timings.connect), ("download", timings.download), ("normalize", timings.normalize),
                                      ("probe", timings.probe), ("thumbnail", timings.thumbnail), ("queued", timings.queued)] {
            guard let milliseconds else { continue }
            stageDurations.get(stage) {
                registry.makeDurationHistogram(descriptor: Self.name("stage_duration_seconds", "Time spent per stage"),
                                               labels: [("stage", stage)], buckets: Self.secondsBuckets)
            }.record(.milliseconds(milliseconds))
        }
        // Bytes and files only where this request did the work.
        guard descriptor.cache == .miss || descriptor.cache == nil else { return }
        if let bytes = descriptor.sourceBytes {
            registry.makeCounter(descriptor: Self.name("downloaded_bytes_total", "Bytes downloaded from origins")).increment(by: bytes)
        }
        let published = [descriptor.publishedUrl, descriptor.thumbnail?.publishedUrl].compactMap { $0 }.count
            + (descriptor.variants ?? [:]).values.filter { $0.publishedUrl != nil }.count
        if published > 0 {
            registry.makeCounter(descriptor: Self.name("published_files_total", "Files published (written or renewed)")).increment(by: Int64(published))
        }
    }

    /// The Prometheus text; `transfers` (read from the pipeline when scraped) sets the transfer gauges.
    private let storeRequests = Made<String, Gauge>()

    func text(transfers: (running: Int, queued: Int), connections: (opened: Int, reused: Int, peakInflightBytes: Int64),
              breakers: (transitions: [String: Int], openHosts: Int), objectStoreRequests: [String: Int] = [:],
              transferPace pace: Int? = nil, traces: SpanExportQueue? = nil) -> String {
        if let traces {
            for (state, count) in [("exported", traces.exported.load(ordering: .relaxed)), ("dropped", traces.dropped.load(ordering: .relaxed)),
                                   ("queued", traces.waiting)] {
                traceSpans.get(state) {
                    registry.makeGauge(descriptor: Self.name("trace_spans", "Spans since start by what became of them: exported to the collector, dropped (queue full, or the collector failed or did not answer), or queued now"),
                                       labels: [("state", state)])
                }.set(Double(count))
            }
        }
        transferPace.set(Double(pace ?? 0))
        breakersOpen.set(Double(breakers.openHosts))
        let added = breakerTransitionsSeen.withLock { seen -> [String: Int] in
            var added: [String: Int] = [:]
            for (state, total) in breakers.transitions where total > seen[state, default: 0] {
                added[state] = total - seen[state, default: 0]
                seen[state] = total
            }
            return added
        }
        for (state, count) in added { breakerTransitions[state]?.increment(by: Int64(count)) }
        transfersRunning.set(Double(transfers.running))
        transfersQueued.set(Double(transfers.queued))
        originConnectionsOpened.set(Double(connections.opened))
        originConnectionsReused.set(Double(connections.reused))
        inflightBytesPeak.set(Double(connections.peakInflightBytes))
        for (method, count) in objectStoreRequests {
            storeRequests.get(method) {
                registry.makeGauge(descriptor: Self.name("object_store_requests", "Requests sent to the object store since start, by method (retries included)"),
                                   labels: [("method", method)])
            }.set(Double(count))
        }
        return registry.emitToString()
    }
}

/// Metrics by their label values, each made once by the registry and then kept. Why: asking the
/// registry for every request built the metric's name and hashed its labels under the
/// registry's lock (2–3 % of the service's CPU under a load of cache hits). Label values come
/// from small sets (routes, statuses, reason codes, cache results), so these stay small.
private final class Made<Key: Hashable & Sendable, Metric: Sendable>: Sendable {
    private let metrics = Locked<[Key: Metric]>([:])

    func get(_ key: Key, make: () -> Metric) -> Metric {
        metrics.withLock { known in
            if let metric = known[key] { return metric }
            let made = make()
            known[key] = made
            return made
        }
    }
}
