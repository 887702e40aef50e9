import Foundation
import Logging

/// Sends queued spans to an OTLP/HTTP collector, in JSON, on the same libcurl engine as the
/// object store's requests (`StoreEngine`, unsigned): one export at a time, at most
/// `maxExportBatch` spans, when that many wait or `scheduleDelay` has passed. A collector that
/// fails or does not answer within `exportTimeout` loses that batch (counted as dropped); the
/// spans behind it wait in the bounded queue, and past its capacity are dropped too. Nothing a
/// request does waits for it.
///
/// Written on the libcurl engine rather than swift-otel's exporter: a first debug build of
/// swift-otel 1.6.0 with only its OTLP/HTTP trait (async-http-client, swift-nio-ssl,
/// swift-protobuf) takes about 3 minutes on a 2-core machine, where the test
/// command's budget is 10 minutes including the build and a clean build of the project alone
/// takes about 4 (247 s); this exporter adds seconds (docs/observability.md#why-not-swift-otel).
package final class OTLPExporter: Sendable {
    package let settings: TraceSettings
    package let queue: SpanExportQueue
    private let engine: StoreEngine
    private let logger: Logger
    private let version: String

    package init(settings: TraceSettings, queue: SpanExportQueue, version: String, logger: Logger) throws(AttachFetchError) {
        self.settings = settings
        self.queue = queue
        self.version = version
        self.logger = logger
        // Its calls make no spans: an export that traced itself would never run out of spans.
        engine = try StoreEngine(credentials: nil, region: "", maxConcurrent: 1, clock: .system, tracesCalls: false)
    }

    /// Exports until the task is cancelled, then sends what is left once (within a second) and
    /// stops its engine.
    package func run() async {
        var waited: Duration = .zero
        let tick: Duration = .milliseconds(50)
        while !Task.isCancelled {
            if queue.waiting >= settings.maxExportBatch || (waited >= settings.scheduleDelay && queue.waiting > 0) {
                await exportBatch(timeout: settings.exportTimeout)
                waited = .zero
                continue
            }
            do { try await Task.sleep(for: tick) } catch { break }
            waited += tick
        }
        // Shutting down: one last export, briefly, unless the collector is already failing.
        if queue.waiting > 0 { await exportBatch(timeout: .seconds(1)) }
        engine.shutdown()
    }

    /// One export of the oldest spans. Returns whether the collector took them.
    @discardableResult
    package func exportBatch(timeout: Duration) async -> Bool {
        let spans = queue.take(settings.maxExportBatch)
        guard !spans.isEmpty else { return true }
        let body: Data
        do {
            body = try OTLPJSON.encode(spans, resource: settings.resource, scopeVersion: version)
        } catch {
            queue.dropped.add(spans.count, ordering: .relaxed)
            return false
        }
        let request = StoreRequest(method: .post, url: settings.endpoint, headers: ["Content-Type: application/json"] + settings.headers,
                                   body: .bytes([UInt8](body)), destination: .memory(limit: 16 * 1024),
                                   deadline: .now + timeout, connectTimeout: min(timeout, .seconds(3)))
        let answer = await engine.perform(request)
        switch answer {
        case .success(let response) where (200..<300).contains(response.status):
            queue.exported.add(spans.count, ordering: .relaxed)
            return true
        case .success(let response):
            fail(spans.count, "the collector answered \(response.status)")
        case .failure(let failure):
            fail(spans.count, failure.message)
        }
        return false
    }

    private func fail(_ count: Int, _ why: String) {
        queue.dropped.add(count, ordering: .relaxed)
        queue.failedExports.add(1, ordering: .relaxed)
        // The endpoint, never the headers (they may hold a credential).
        logger.warning("trace export failed; spans dropped", metadata: ["spans": "\(count)", "why": "\(why)",
                                                                        "endpoint": "\(ClientSpanAttributes.redacted(settings.endpoint))"])
    }
}
