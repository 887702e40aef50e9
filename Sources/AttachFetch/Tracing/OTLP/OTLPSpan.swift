package import Tracing

/// A span the OTLP tracer made: its identity fixed at the start, the rest (name, attributes,
/// events, links, status) behind a lock until `end`, which hands a `FinishedSpan` to the export
/// queue. A span not sampled records nothing and is never queued; its context still propagates.
package final class OTLPSpan: Span {
    package let context: ServiceContext
    let trace: TraceContext
    let parentSpanID: [UInt8]?
    let kind: SpanKind
    let startNanos: UInt64
    package let isRecording: Bool
    private let queue: SpanExportQueue

    private struct State {
        var name: String
        var attributes = SpanAttributes()
        var events: [SpanEvent] = []
        var links: [SpanLink] = []
        var status: SpanStatus?
        var ended = false
    }

    private let state: Locked<State>

    init(name: String, context: ServiceContext, trace: TraceContext, parentSpanID: [UInt8]?, kind: SpanKind,
         startNanos: UInt64, queue: SpanExportQueue) {
        self.context = context
        self.trace = trace
        self.parentSpanID = parentSpanID
        self.kind = kind
        self.startNanos = startNanos
        self.isRecording = trace.sampled
        self.queue = queue
        state = Locked(State(name: name))
    }

    package var operationName: String {
        get { state.withLock { $0.name } }
        set { state.withLock { $0.name = newValue } }
    }

    package var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set {
            guard isRecording else { return }
            state.withLock { $0.attributes = newValue }
        }
    }

    package func setStatus(_ status: SpanStatus) {
        guard isRecording else { return }
        state.withLock { current in
            // An OK status is final; an error does not replace it (the specification's rule).
            if current.status?.code != .ok { current.status = status }
        }
    }

    package func addEvent(_ event: SpanEvent) {
        guard isRecording else { return }
        state.withLock { $0.events.append(event) }
    }

    package func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        guard isRecording else { return }
        var all = attributes
        all["exception.type"] = "\(type(of: error))"
        all["exception.message"] = "\(error)"
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: all))
    }

    package func addLink(_ link: SpanLink) {
        guard isRecording else { return }
        state.withLock { $0.links.append(link) }
    }

    package func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        guard isRecording else { return }
        let endNanos = instant().nanosecondsSinceEpoch
        let finished: FinishedSpan? = state.withLock { current in
            guard !current.ended else { return nil }
            current.ended = true
            return FinishedSpan(name: current.name, trace: trace, parentSpanID: parentSpanID, kind: kind,
                                startNanos: startNanos, endNanos: max(endNanos, startNanos),
                                attributes: current.attributes, events: current.events,
                                links: current.links.compactMap { link in link.context[TraceContextKey.self].map { ($0, link.attributes) } },
                                status: current.status)
        }
        if let finished { queue.push(finished) }
    }
}

/// An ended span, as the exporter sends it.
package struct FinishedSpan: Sendable {
    var name: String
    var trace: TraceContext
    var parentSpanID: [UInt8]?
    var kind: SpanKind
    var startNanos: UInt64
    var endNanos: UInt64
    var attributes: SpanAttributes
    var events: [SpanEvent]
    var links: [(TraceContext, SpanAttributes)]
    var status: SpanStatus?
}
