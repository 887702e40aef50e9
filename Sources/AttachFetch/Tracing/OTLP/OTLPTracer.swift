package import Tracing

/// A tracer that gives each span W3C Trace Context identity, samples as configured, and queues
/// ended spans for `OTLPExporter`. It is the instrument too: it reads a caller's `traceparent`
/// and `tracestate` and writes the current span's. Bootstrapped by `serve` when the
/// environment names a collector (`TraceSettings`).
package final class OTLPTracer: Tracer {
    package typealias Span = OTLPSpan
    let sampler: TraceSampler
    package let queue: SpanExportQueue

    package init(sampler: TraceSampler, queue: SpanExportQueue) {
        self.sampler = sampler
        self.queue = queue
    }

    package func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> OTLPSpan {
        var spanContext = context()
        let parent = spanContext[TraceContextKey.self]
        let traceID = parent?.traceID ?? TraceContext.randomID(16)
        let trace = TraceContext(traceID: traceID, spanID: TraceContext.randomID(8),
                                 sampled: sampler.samples(traceID: traceID, parent: parent), traceState: parent?.traceState)
        spanContext[TraceContextKey.self] = trace
        return OTLPSpan(name: operationName, context: spanContext, trace: trace, parentSpanID: parent?.spanID, kind: kind,
                        startNanos: instant().nanosecondsSinceEpoch, queue: queue)
    }

    package func activeSpan(identifiedBy context: ServiceContext) -> OTLPSpan? { nil }

    /// The exporter sends on its own schedule; nothing to hurry here.
    package func forceFlush() {}

    package func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        guard let header = extractor.extract(key: "traceparent", from: carrier),
              let trace = TraceContext(traceparent: header, tracestate: extractor.extract(key: "tracestate", from: carrier))
        else { return }
        context[TraceContextKey.self] = trace
    }

    package func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let trace = context[TraceContextKey.self] else { return }
        injector.inject(trace.traceparent, forKey: "traceparent", into: &carrier)
        if let state = trace.traceState { injector.inject(state, forKey: "tracestate", into: &carrier) }
    }
}
