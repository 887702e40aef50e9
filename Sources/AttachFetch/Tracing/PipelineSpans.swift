import Foundation
internal import Tracing

/// The pipeline's spans, through swift-distributed-tracing's `InstrumentationSystem`: whatever
/// tracer the embedding program bootstrapped sees them inside its own trace (the task's
/// `ServiceContext`). Without one the no-op tracer answers, and nothing below computes an
/// attribute: each caller asks `isRecording` first.
///
/// Attribute names follow OpenTelemetry's semantic conventions where one exists
/// (`url.full`, `url.scheme`, `server.address`, `server.port`, `http.response.status_code`,
/// `error.type`); the rest are `attach_fetch.`-prefixed. docs/observability.md lists them. A URL's
/// attributes are `ClientSpanAttributes`', shared with the object store's spans.
enum PipelineSpans {
    /// An attachment's verdict on its span: status, reason (`error.type` and an error status
    /// when it failed), kind, bytes, and whether the result was made, coalesced or cached.
    static func record(_ descriptor: AttachmentDescriptor, cache: String?, on span: any Span) {
        guard span.isRecording else { return }
        span.attributes["attach_fetch.status"] = descriptor.status.rawValue
        if let kind = descriptor.kind { span.attributes["attach_fetch.kind"] = kind.rawValue }
        if let bytes = descriptor.bytes { span.attributes["attach_fetch.bytes"] = Int(bytes) }
        if let cache { span.attributes["attach_fetch.cache"] = cache }
        if let reason = descriptor.reason {
            span.attributes["attach_fetch.reason"] = reason.code.rawValue
            if descriptor.status != .ready {
                span.attributes["error.type"] = reason.code.rawValue
                span.setStatus(SpanStatus(code: .error, message: reason.code.rawValue))
            }
        }
    }

    /// A finished transfer's facts on the download span, and its queue wait and connection as
    /// child spans placed by the transfer's own timings (the engine's thread runs no spans).
    static func record(_ outcome: TransferOutcome, started: ContinuousClock.Instant, on span: any Span) {
        guard span.isRecording else { return }
        if let status = outcome.httpStatus { span.attributes["http.response.status_code"] = status }
        span.attributes["attach_fetch.bytes"] = Int(outcome.bytes)
        if let type = outcome.sniffedMIME { span.attributes["attach_fetch.sniffed_type"] = type }
        if let failure = outcome.failure {
            span.attributes["error.type"] = failure.code.rawValue
            span.setStatus(SpanStatus(code: .error, message: failure.code.rawValue))
        }
        if outcome.notModified { span.attributes["attach_fetch.cache"] = "revalidated" }
        // Wall-clock nanoseconds of `started`, from the monotonic clock's distance to now.
        let startNanos = DefaultTracerClock.now.nanosecondsSinceEpoch - UInt64(max(0, (ContinuousClock.now - started).nanoseconds))
        func child(_ name: String, fromMs: Int, ms: Int) {
            let begin = startNanos + UInt64(fromMs) * 1_000_000
            let child = InstrumentationSystem.tracer.startSpan(name, context: span.context, at: Instant(nanos: begin))
            child.end(at: Instant(nanos: begin + UInt64(ms) * 1_000_000))
        }
        let queued = outcome.queuedMilliseconds ?? 0
        if queued > 0 { child("attach_fetch.queue", fromMs: 0, ms: queued) }
        if let connect = outcome.connectMilliseconds { child("attach_fetch.connect", fromMs: queued, ms: connect) }
    }

    /// A wall-clock instant in nanoseconds since 1970.
    struct Instant: TracerInstant {
        var nanosecondsSinceEpoch: UInt64
        init(nanos: UInt64) { nanosecondsSinceEpoch = nanos }
        static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch }
    }
}

extension Duration {
    /// Whole nanoseconds.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
