import AttachFetch
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import Tracing

/// Traces: `serve` exports OTLP over HTTP when the environment names a collector
/// (docs/observability.md). The tracer is process-wide (`InstrumentationSystem`), so it is
/// bootstrapped by the program, once, never by a server a test or an app makes.
extension AttachFetchServer {
    /// Reads OpenTelemetry's environment variables; when they name a collector, bootstraps the
    /// process's tracer and returns the exporter to hand to `init(configuration:logger:traces:)`.
    /// Nil when tracing is off. Throws naming the variable that cannot be used.
    package static func bootstrapTracing(environment: [String: String], version: String,
                                         logger: Logger) throws(AttachFetchError) -> OTLPExporter? {
        let settings: TraceSettings?
        do { settings = try TraceSettings.fromEnvironment(environment) } catch {
            throw .invalidConfiguration(error.description)
        }
        guard let settings else { return nil }
        let queue = SpanExportQueue(capacity: settings.maxQueueSize)
        let exporter = try OTLPExporter(settings: settings, queue: queue, version: version, logger: logger)
        InstrumentationSystem.bootstrap(OTLPTracer(sampler: settings.sampler, queue: queue))
        logger.info("exporting traces", metadata: ["endpoint": "\(settings.endpoint.split(separator: "?").first ?? "")",
                                                   "service": "\(settings.resource.first?.1 ?? "")"])
        return exporter
    }
}

/// The exporter as a service of the server's group: it stops last (listed first), so the
/// spans of the requests drained at shutdown are sent.
struct TraceExportService: Service {
    let exporter: OTLPExporter

    func run() async throws {
        await cancelWhenGracefulShutdown { await exporter.run() }
    }
}

/// Writes the server span's `traceparent` (and `tracestate`) into the answer, so that a caller
/// can find the service's part of its trace. Inside `TracingMiddleware`, which makes that span.
struct TraceResponseHeaders<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        if let current = ServiceContextModule.ServiceContext.current {
            InstrumentationSystem.instrument.inject(current, into: &response.headers, using: HTTPFieldsInjector())
        }
        return response
    }
}

private struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        fields[name] = value
    }
}
