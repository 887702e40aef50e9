import AttachFetch
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import UnixSignals

/// `attach-fetch serve`: the pipeline as an HTTP service (Hummingbird), for push backends in
/// any language. One pipeline (with the result cache on) serves every request.
public final class AttachFetchServer: Sendable {
    /// The settings the server was made with.
    public let configuration: ServiceConfiguration
    let pipeline: AttachmentPipeline
    let metrics = ServiceMetrics()
    let files: BatchFiles
    private let logger: Logger
    private let draining = Atomic<Bool>(false)
    /// The object store's last answer to `/readyz` (when, and its problem if any), reused for
    /// `storeCheckReuse`: the route is public and load balancers probe it every few seconds, so
    /// one store request serves every probe in that time, and a flood of probes sends no more.
    private let storeReadiness = Locked<(at: ContinuousClock.Instant, problem: String?)?>(nil)
    static let storeCheckReuse: Duration = .seconds(5)
    let traces: OTLPExporter?

    /// Makes the server and its pipeline; throws ``AttachFetchError`` when a setting cannot work.
    /// Nothing listens until `run`.
    public convenience init(configuration: ServiceConfiguration, logger: Logger) throws(AttachFetchError) {
        try self.init(configuration: configuration, logger: logger, traces: nil)
    }

    /// `traces`: the exporter `bootstrapTracing` made, run beside the server (`serve` only).
    package init(configuration: ServiceConfiguration, logger: Logger, traces: OTLPExporter?) throws(AttachFetchError) {
        self.traces = traces
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        self.files = try BatchFiles(temporaryDirectory: configuration.pipeline.temporaryDirectory, retention: configuration.retention,
                                    longestBatch: configuration.maxDeadline + .seconds(1))
        do {
            self.pipeline = try AttachmentPipeline(configuration: configuration.pipeline, logger: logger)
            metrics.decoders(pipeline.decoderConfinement)
        } catch {
            files.removeAll()
            throw error
        }
    }

    /// Serves until the task is cancelled or, with `gracefulShutdownSignals`, one of them
    /// arrives: then `/readyz` turns 503, the listener stops, requests in flight finish by
    /// their own deadlines, and the pipeline and every batch file are removed.
    /// `onListening` gets the bound port (useful with port 0).
    public func run(gracefulShutdownSignals: [UnixSignal] = [], onListening: @escaping @Sendable (Int) -> Void = { _ in }) async throws {
        let gate = ConnectionGate(maxConnections: configuration.connections.maxConnections, metrics: metrics)
        let idleTimeout = configuration.connections.idleTimeout, bodyTimeout = configuration.connections.bodyTimeout
        let application = Application(
            router: makeRouter(),
            server: .http1(configuration: .init(additionalChannelHandlers: [
                ConnectionGuard(gate: gate, idleTimeout: idleTimeout, bodyTimeout: bodyTimeout), ClientDisconnectWatch(),
            ])),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "attach-fetch"),
            services: [RetentionSweeper(files: files)],
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        // A group shuts its services down one at a time, last first: the drain watch comes
        // after the application so that /readyz turns 503 (and stays so for the drain delay,
        // the listener still open) before the server stops accepting. Inside the application
        // it would run after the server had already stopped.
        let drain = DrainWatch(delay: configuration.drainDelay) { [weak self] in self?.draining.store(true, ordering: .relaxed) }
        // The trace exporter first: it stops last, after the requests it traces.
        let services: [any Service] = (traces.map { [TraceExportService(exporter: $0)] } ?? []) + [application, drain]
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: gracefulShutdownSignals,
                                                      logger: logger))
        do {
            try await group.run()
        } catch {
            await stop()
            throw error
        }
        await stop()
    }

    /// Checks the object store once (``AttachmentPipeline/checkObjectStore(timeout:)``); when it
    /// cannot be used, the server is stopped (its pipeline shut down) and the error thrown.
    public func checkObjectStore() async throws(AttachFetchError) {
        do { try await pipeline.checkObjectStore() } catch {
            await stop()
            throw error
        }
    }

    func stop() async {
        draining.store(true, ordering: .relaxed)
        await pipeline.shutdown()
        files.removeAll()
    }

    func ready() async throws(APIError) -> Response {
        if draining.load(ordering: .relaxed) { throw APIError.draining }
        let clock = configuration.pipeline.clock, now = clock.now
        let recent = storeReadiness.withLock { last in last.flatMap { now - $0.at < Self.storeCheckReuse ? $0 : nil } }
        let problem: String?
        if let recent {
            problem = recent.problem
        } else {
            do { try await pipeline.checkObjectStore(timeout: .seconds(2)); problem = nil } catch { problem = error.message }
            storeReadiness.withLock { $0 = (clock.now, problem) }
        }
        if let problem { throw APIError(status: .serviceUnavailable, code: "objectStoreUnavailable", message: problem) }
        if let publish = configuration.pipeline.publish, access(publish.directory, W_OK | X_OK) != 0 {
            throw APIError(status: .serviceUnavailable, code: "publishDirectoryNotWritable",
                           message: "the publish directory \(publish.directory) is not writable")
        }
        do { return try Self.json(Readiness(status: "ready", decoders: pipeline.decoderConfinement)) } catch {
            throw APIError(status: .internalServerError, code: "internal", message: error.description)
        }
    }

    /// The batch deadline: the body's `deadlineMs`, else `X-Deadline-Ms`, else the pipeline's
    /// default; clipped to `maxDeadline`. A malformed value is refused, not clipped.
    private func deadline(_ bodyMilliseconds: Double?, _ request: Request) throws(APIError) -> Duration {
        var milliseconds = bodyMilliseconds
        // Checked whenever sent, so that a bad header is refused whether or not the body wins.
        if let header = request.headers[HTTPField.Name("X-Deadline-Ms")!] {
            let parsed = try APIRequests.deadlineHeader(header)
            if milliseconds == nil { milliseconds = parsed }
        }
        let asked = milliseconds.map { Duration.milliseconds(min($0, 86_400_000)) } ?? configuration.pipeline.defaultDeadline
        return min(asked, configuration.maxDeadline)
    }

    private func body(_ body: RequestBody) async throws -> Data {
        do {
            return Data(buffer: try await body.collect(upTo: configuration.maxBodyBytes))
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw APIError.tooLarge(configuration.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw APIError.tooLarge(configuration.maxBodyBytes)
        } catch is RequestBodyTimeout {
            throw APIError.requestTimeout(configuration.connections.bodyTimeout)
        }
    }

    func attachments(_ request: Request, _ context: ServiceContext) async throws -> Response {
        let data = try await body(request.body)
        var (requests, milliseconds, keepsFiles, encrypt) = try APIRequests.attachments(
            data, maxRequests: configuration.maxRequestsPerCall, transcoding: configuration.pipeline.transcoding)
        if let encrypt = try APIRequests.encryption(encrypt, configured: configuration.pipeline.mediaEncryption, field: "encrypt") {
            for index in requests.indices { requests[index].encrypt = encrypt }
        }
        let deadline = try deadline(milliseconds, request)
        if request.headers[.accept]?.contains("application/x-ndjson") == true {
            return try await streamed(requests, deadline: deadline, keepsFiles: keepsFiles, context: context)
        }
        return try Self.json(BatchDocument(try await run(requests, deadline: deadline, keepsFiles: keepsFiles, context: context)))
    }

    func payloads(_ request: Request, _ context: ServiceContext) async throws -> Response {
        let stripFailed = try APIRequests.flag(request.uri.queryParameters.get("stripFailed"), field: "stripFailed")
        let rewrite = try APIRequests.flag(request.uri.queryParameters.get("rewrite"), field: "rewrite")
        let keepsFiles = try APIRequests.keepsFiles(request.uri.queryParameters.get("files"), field: "the files parameter")
        let encrypt = try APIRequests.encryption(
            request.uri.queryParameters.get("encrypt") == nil ? nil
                : try APIRequests.flag(request.uri.queryParameters.get("encrypt"), field: "encrypt"),
            configured: configuration.pipeline.mediaEncryption, field: "encrypt")
        if rewrite && configuration.pipeline.publish == nil && configuration.pipeline.objectStore == nil {
            throw APIError.notConfigured("rewrite=true needs the service to publish (--publish-dir and --public-base, or --publish-to)")
        }
        let data = try await body(request.body)
        let payload = try Self.payload(data)
        let media = payload.media()
        guard media.count <= configuration.maxRequestsPerCall else {
            throw APIError.invalidRequest("the payload names \(media.count) media; at most \(configuration.maxRequestsPerCall)")
        }
        let platforms = PushPayload.platforms(for: media, configured: configuration.pipeline.platforms)
        let requests = media.map {
            var request = $0.request(platforms: platforms)
            request.encrypt = encrypt
            return request
        }
        let batch = try await run(requests, deadline: try deadline(nil, request),
                                  keepsFiles: keepsFiles, context: context)
        let lint = payload.lint(media: media, descriptors: batch.attachments)
            + payload.platformLint(media: media, descriptors: batch.attachments, rewriting: rewrite)
        var document = BatchDocument(batch, lint: lint)
        let answered: Data?
        if rewrite {
            answered = payload.rewritten(media: media, descriptors: batch.attachments, pretty: false)
            document.lint = (document.lint ?? []) + PushPayload.rewriteLint(answered!)
        } else if stripFailed {
            let failed = zip(media, batch.attachments).filter { $0.1.status != .ready }.map { $0.0.entry }
            answered = payload.removing(failed, pretty: false)
        } else {
            answered = nil
        }
        if let answered { document.payload = try JSONValue(json: answered) }
        return try Self.json(document)
    }

    private static func payload(_ data: Data) throws(APIError) -> PushPayload {
        do { return try PushPayload(data: data) } catch {
            throw APIError.invalidRequest("the body: \(error.message)")
        }
    }

    /// Runs one batch under the overload limit, cancelled if the client goes away; a cancelled
    /// batch has its files removed. Without `keepsFiles` no directory is made at all.
    private func run(_ requests: [AttachmentRequest], deadline: Duration, keepsFiles: Bool,
                     context: ServiceContext) async throws -> AttachmentBatch {
        guard metrics.startBatch(attachments: requests.count, limit: configuration.maxBatches) else { throw APIError.overloaded }
        defer { metrics.endBatch(attachments: requests.count) }
        let directory = keepsFiles ? try files.newBatch() : nil
        let batch: AttachmentBatch
        do {
            batch = try await context.channel.disconnectWatch.cancellingOnDisconnect {
                let batch = await self.pipeline.process(requests, deadline: deadline, outputDirectory: directory,
                                                        keepingFiles: keepsFiles, logger: context.logger)
                for descriptor in batch.attachments {
                    self.metrics.attachment(descriptor)
                    context.outcome.count(descriptor.status.rawValue)
                }
                try Task.checkCancellation()
                return batch
            }
        } catch {
            if let directory { files.remove(directory) }
            throw error
        }
        if let directory, !batch.attachments.contains(where: { $0.status == .ready }) { files.remove(directory) }
        return batch
    }

    /// NDJSON: one descriptor per line as each finishes, then a closing summary line. A client
    /// that goes away cancels the batch at once (as in `run`); its files are removed.
    private func streamed(_ requests: [AttachmentRequest], deadline: Duration, keepsFiles: Bool,
                          context: ServiceContext) async throws -> Response {
        let watch = try await context.channel.disconnectWatch
        guard metrics.startBatch(attachments: requests.count, limit: configuration.maxBatches) else { throw APIError.overloaded }
        let directory: String?
        do { directory = keepsFiles ? try files.newBatch() : nil } catch {
            metrics.endBatch(attachments: requests.count)
            throw error
        }
        let pipeline = self.pipeline, metrics = self.metrics, files = self.files, logger = context.logger, outcome = context.outcome
        let body = ResponseBody { writer in
            defer { metrics.endBatch(attachments: requests.count) }
            let started = ContinuousClock.now
            var counts: [String: Int] = [:]
            var finished = 0
            // The batch runs in a task that the disconnect watch cancels (a write would notice a
            // client that went away only at the next descriptor, which may be seconds away).
            // Descriptors are relayed to this task, which owns the writer; the task ends only
            // when the batch has, so its files are settled before any are removed.
            let (descriptors, relay) = AsyncStream<AttachmentDescriptor>.makeStream()
            let producer = Task {
                defer { relay.finish() }
                try await watch.cancellingOnDisconnect {
                    _ = await pipeline.process(requests, deadline: deadline, outputDirectory: directory, keepingFiles: keepsFiles,
                                               logger: logger) { _, descriptor in
                        relay.yield(descriptor)
                    }
                    try Task.checkCancellation()
                }
            }
            do {
                for await descriptor in descriptors {
                    metrics.attachment(descriptor)
                    outcome.count(descriptor.status.rawValue)
                    counts[descriptor.status.rawValue, default: 0] += 1
                    finished += 1
                    try await writer.write(ByteBuffer(string: try JSONWriter.string(descriptor) + "\n"))
                }
                try await producer.value
                let summary = StreamSummary(done: true, elapsedMs: (ContinuousClock.now - started).wholeMilliseconds,
                                            deadlineMs: deadline.wholeMilliseconds, directory: directory, attachments: finished,
                                            byStatus: counts)
                try await writer.write(ByteBuffer(string: try JSONWriter.string(summary) + "\n"))
                try await writer.finish(nil)
            } catch {
                producer.cancel()
                _ = await producer.result
                if let directory { files.remove(directory) }
                throw error
            }
        }
        return Response(status: .ok, headers: [.contentType: "application/x-ndjson"], body: body)
    }

    /// A JSON answer; a value that cannot be encoded throws, and the middleware answers 500.
    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws(JSONWriter.Failure) -> Response {
        Response(status: status, headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(string: try JSONWriter.string(value) + "\n")))
    }
}
