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
    public let configuration: ServiceConfiguration
    private let pipeline: AttachmentPipeline
    private let metrics = ServiceMetrics()
    private let files: BatchFiles
    private let logger: Logger
    private let draining = Atomic<Bool>(false)

    public init(configuration: ServiceConfiguration, logger: Logger) throws(AttachFetchError) {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        self.files = try BatchFiles(temporaryDirectory: configuration.pipeline.temporaryDirectory, retention: configuration.retention)
        do {
            self.pipeline = try AttachmentPipeline(configuration: configuration.pipeline, logger: logger)
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
        let application = Application(
            router: makeRouter(),
            server: .http1(configuration: .init(additionalChannelHandlers: [ClientDisconnectWatch()])),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "attach-fetch"),
            services: [RetentionSweeper(files: files),
                       DrainWatch { [weak self] in self?.draining.store(true, ordering: .relaxed) }],
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [application], gracefulShutdownSignals: gracefulShutdownSignals,
                                                      logger: logger))
        do {
            try await group.run()
        } catch {
            await stop()
            throw error
        }
        await stop()
    }

    private func stop() async {
        draining.store(true, ordering: .relaxed)
        await pipeline.shutdown()
        files.removeAll()
    }

    // MARK: Routes

    private func makeRouter() -> Router<ServiceContext> {
        let router = Router(context: ServiceContext.self)
        router.add(middleware: ErrorsLogsAndMetrics(metrics: metrics, maxBodyBytes: configuration.maxBodyBytes))
        router.add(middleware: BearerTokens(tokens: configuration.tokens.map { Array($0.utf8) }))
        router.get("/healthz") { _, _ in Self.json(["status": "ok"]) }
        router.head("/healthz") { _, _ in Response(status: .ok) }
        router.get("/readyz") { _, _ in try self.ready() }
        router.head("/readyz") { _, _ in _ = try self.ready(); return Response(status: .ok) }
        router.get("/metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                     body: .init(byteBuffer: ByteBuffer(string: self.metrics.text(transfers: self.pipeline.transfersInFlight))))
        }
        router.post("/v1/attachments") { request, context in try await self.attachments(request, context) }
        router.post("/v1/payloads") { request, context in try await self.payloads(request, context) }
        let media = configuration.pipeline.publish.map { MediaFiles(directory: $0.directory) }
        for method in [HTTPRequest.Method.get, .head] {
            router.on("/media/{name}", method: method) { request, context in
                guard let media else { throw APIError.notFound(request.uri.path) }
                // The raw path: a name with encoded characters is not a published name.
                return try media.respond(name: String(request.uri.path.dropFirst("/media/".count)), request: request)
            }
        }
        return router
    }

    private func ready() throws(APIError) -> Response {
        if draining.load(ordering: .relaxed) { throw APIError.draining }
        if let publish = configuration.pipeline.publish, access(publish.directory, W_OK | X_OK) != 0 {
            throw APIError(status: .serviceUnavailable, code: "publishDirectoryNotWritable",
                           message: "the publish directory \(publish.directory) is not writable")
        }
        return Self.json(["status": "ready"])
    }

    /// The batch deadline: the body's `deadlineMs`, else `X-Deadline-Ms`, else the pipeline's
    /// default; clipped to `maxDeadline`, never refused.
    private func deadline(_ bodyMilliseconds: Double?, _ request: Request) throws(APIError) -> Duration {
        var milliseconds = bodyMilliseconds
        if milliseconds == nil, let header = request.headers[HTTPField.Name("X-Deadline-Ms")!] {
            milliseconds = try APIRequests.deadlineMs(Double(header) ?? -1, field: "X-Deadline-Ms")
        }
        let asked = milliseconds.map { Duration.milliseconds(Int64(min($0, 86_400_000))) } ?? configuration.pipeline.defaultDeadline
        return min(asked, configuration.maxDeadline)
    }

    private func body(_ body: RequestBody) async throws -> Data {
        do {
            return Data(buffer: try await body.collect(upTo: configuration.maxBodyBytes))
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw APIError.tooLarge(configuration.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw APIError.tooLarge(configuration.maxBodyBytes)
        }
    }

    private func attachments(_ request: Request, _ context: ServiceContext) async throws -> Response {
        let data = try await body(request.body)
        let (requests, milliseconds) = try APIRequests.attachments(data, maxRequests: configuration.maxRequestsPerCall)
        let deadline = try deadline(milliseconds, request)
        if request.headers[.accept]?.contains("application/x-ndjson") == true {
            return try streamed(requests, deadline: deadline, context: context)
        }
        return Self.json(BatchDocument(try await run(requests, deadline: deadline, context: context)))
    }

    private func payloads(_ request: Request, _ context: ServiceContext) async throws -> Response {
        let stripFailed = request.uri.queryParameters.get("stripFailed") == "true"
        let rewrite = request.uri.queryParameters.get("rewrite") == "true"
        if rewrite && configuration.pipeline.publish == nil {
            throw APIError.invalidRequest("rewrite=true needs the service to publish (--publish-dir and --public-base)")
        }
        let data = try await body(request.body)
        let payload = try Self.payload(data)
        let media = payload.media()
        guard media.count <= configuration.maxRequestsPerCall else {
            throw APIError.invalidRequest("the payload names \(media.count) media; at most \(configuration.maxRequestsPerCall)")
        }
        let platforms = PushPayload.platforms(for: media, configured: configuration.pipeline.platforms)
        let batch = try await run(media.map { $0.request(platforms: platforms) }, deadline: try deadline(nil, request), context: context)
        let lint = payload.lint(media: media, descriptors: batch.attachments)
            + payload.platformLint(media: media, descriptors: batch.attachments, rewriting: rewrite)
        var document = PayloadDocument(BatchDocument(batch, lint: lint))
        if rewrite {
            document.payload = RawJSON(payload.rewritten(media: media, descriptors: batch.attachments))
        } else if stripFailed {
            let failed = zip(media, batch.attachments).filter { $0.1.status != .ready }.map { $0.0.entry }
            document.payload = RawJSON(payload.removing(failed))
        }
        return Self.json(document)
    }

    private static func payload(_ data: Data) throws(APIError) -> PushPayload {
        do { return try PushPayload(data: data) } catch {
            throw APIError.invalidRequest("the body: \(error.message)")
        }
    }

    /// Runs one batch under the overload limit, cancelled if the client goes away; a cancelled
    /// batch has its files removed.
    private func run(_ requests: [AttachmentRequest], deadline: Duration, context: ServiceContext) async throws -> AttachmentBatch {
        guard metrics.startBatch(attachments: requests.count, limit: configuration.maxBatches) else { throw APIError.overloaded }
        defer { metrics.endBatch(attachments: requests.count) }
        let directory = try files.newBatch()
        let batch: AttachmentBatch
        do {
            batch = try await context.channel.disconnectWatch.cancellingOnDisconnect {
                let batch = await self.pipeline.process(requests, deadline: deadline, outputDirectory: directory, logger: context.logger)
                for descriptor in batch.attachments {
                    self.metrics.attachment(descriptor)
                    context.outcome.count(descriptor.status.rawValue)
                }
                try Task.checkCancellation()
                return batch
            }
        } catch {
            files.remove(directory)
            throw error
        }
        if !batch.attachments.contains(where: { $0.status == .ready }) { files.remove(directory) }
        return batch
    }

    /// NDJSON: one descriptor per line as each finishes, then a closing summary line. A client
    /// that goes away ends the stream, which cancels what is left; its files are removed.
    private func streamed(_ requests: [AttachmentRequest], deadline: Duration, context: ServiceContext) throws -> Response {
        guard metrics.startBatch(attachments: requests.count, limit: configuration.maxBatches) else { throw APIError.overloaded }
        let directory: String
        do { directory = try files.newBatch() } catch {
            metrics.endBatch(attachments: requests.count)
            throw error
        }
        let pipeline = self.pipeline, metrics = self.metrics, files = self.files, logger = context.logger, outcome = context.outcome
        let body = ResponseBody { writer in
            defer { metrics.endBatch(attachments: requests.count) }
            let started = ContinuousClock.now
            var counts: [String: Int] = [:]
            var finished = 0
            do {
                for await item in pipeline.descriptors(for: requests, deadline: deadline, outputDirectory: directory, logger: logger) {
                    metrics.attachment(item.descriptor)
                    outcome.count(item.descriptor.status.rawValue)
                    counts[item.descriptor.status.rawValue, default: 0] += 1
                    finished += 1
                    try await writer.write(ByteBuffer(string: BatchDocument.encode(item.descriptor, pretty: false) + "\n"))
                }
                let summary = StreamSummary(done: true, elapsedMs: (ContinuousClock.now - started).wholeMilliseconds,
                                            deadlineMs: deadline.wholeMilliseconds, directory: directory, attachments: finished,
                                            byStatus: counts)
                try await writer.write(ByteBuffer(string: BatchDocument.encode(summary, pretty: false) + "\n"))
                try await writer.finish(nil)
            } catch {
                files.remove(directory)
                throw error
            }
        }
        return Response(status: .ok, headers: [.contentType: "application/x-ndjson"], body: body)
    }

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(string: BatchDocument.encode(value, pretty: false) + "\n")))
    }
}

/// The closing line of an NDJSON stream.
struct StreamSummary: Encodable {
    var done: Bool
    var elapsedMs: Int
    var deadlineMs: Int
    var directory: String
    var attachments: Int
    var byStatus: [String: Int]
}

/// `/v1/payloads`' answer: the batch document plus the payload, stripped or rewritten.
struct PayloadDocument: Encodable {
    var batch: BatchDocument
    var payload: RawJSON?

    init(_ batch: BatchDocument) { self.batch = batch }

    enum CodingKeys: String, CodingKey { case payload }

    func encode(to encoder: any Encoder) throws {
        try batch.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(payload, forKey: .payload)
    }
}

/// JSON produced elsewhere (the payload), embedded as it is.
struct RawJSON: Encodable {
    let value: JSONValue

    init(_ data: Data) {
        value = (try? JSONDecoder().decode(JSONValue.self, from: data)) ?? .object([:])
    }

    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

/// Any JSON value, to carry a payload through Codable.
indirect enum JSONValue: Codable, Sendable {
    case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 { try container.encode(Int64(value)) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

/// Turns `/readyz` to 503 as soon as graceful shutdown begins.
struct DrainWatch: Service {
    let onDrain: @Sendable () -> Void

    func run() async throws {
        try? await gracefulShutdown()
        onDrain()
    }
}
