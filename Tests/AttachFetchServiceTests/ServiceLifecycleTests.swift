@testable import AttachFetch
@testable import AttachFetchService
import Foundation
import Hummingbird
import NIOCore
import NIOEmbedded
import Logging
import ServiceLifecycle
import Testing
import ServiceTestHelpers
import TestHelpers

/// The service as a part of an app: in the app's own `ServiceGroup`, and its router driven
/// without a socket. The pipeline scoped to a call.
@Suite struct ServiceLifecycleTests {
    func configuration(_ scratch: Scratch) -> ServiceConfiguration {
        var pipeline = AttachFetchConfiguration()
        pipeline.allowPrivateNetwork = true
        pipeline.temporaryDirectory = scratch.path
        var configuration = ServiceConfiguration(pipeline: pipeline)
        configuration.port = 0
        return configuration
    }

    /// Another service of the app stops the group; the server drains and stops with it, its
    /// files gone.
    @Test(.timeLimit(.minutes(1))) func theServerRunsAndStopsInAnAppsOwnServiceGroup() async throws {
        let scratch = Scratch()
        // A port picked here, so that the app can see the server listening on it.
        var settings = configuration(scratch)
        settings.port = try LoopbackSockets.freePort()
        let server = try AttachFetchServer(configuration: settings, logger: AttachmentPipeline.silentLogger)
        /// Returns once the server takes connections on `port`.
        struct StopsTheGroup: Service {
            let port: Int
            let stoppedAt: Locked<ContinuousClock.Instant?>
            func run() async throws {
                try await waitUntil("the server to listen on port \(port)") { LoopbackSockets.canConnect(port: port) }
                stoppedAt.withLock { $0 = .now }
            }
        }
        let stoppedAt = Locked<ContinuousClock.Instant?>(nil)
        // A service that returns ends the group: ServiceGroup then shuts the others down.
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: server), .init(service: StopsTheGroup(port: settings.port, stoppedAt: stoppedAt), successTerminationBehavior: .gracefullyShutdownGroup)],
            logger: AttachmentPipeline.silentLogger))
        try await group.run()
        let stopping = try #require(stoppedAt.withLock { $0 })
        #expect(ContinuousClock.now - stopping < .seconds(10), "the server stopped with the group")
        #expect(scratch.tree() == [], "the server's files are removed when the group stops it")
    }

    /// An answer of the router's, checked against the OpenAPI document as `Exchange.send` checks
    /// those that come over a socket.
    static func expectContract(_ method: String, _ path: String, _ answer: RouterDriver.Answer,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        let problems = OpenAPIContract.problems(method: method, path: path, status: Int(answer.response.status.code),
                                                contentType: answer.response.headers[.contentType], body: Data(answer.body.utf8))
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
    }

    /// The routes driven without a socket or a port.
    @Test func theRouterAnswersWithoutASocket() async throws {
        let scratch = Scratch()
        let server = try AttachFetchServer(configuration: configuration(scratch), logger: AttachmentPipeline.silentLogger)
        let router = RouterDriver(responder: server.makeRouter().buildResponder())
        let health = try await router.send(.get, "/healthz")
        #expect(health.response.status == .ok && health.body.contains("ok"))
        Self.expectContract("GET", "/healthz", health)
        let page = try await router.send(.get, "/")
        #expect(page.response.status == .ok && page.response.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
        Self.expectContract("GET", "/", page)
        let badBody = try await router.send(.post, "/v1/attachments", body: #"{"urls": 3}"#)
        #expect(badBody.response.status == .badRequest && badBody.body.contains("urls must be an array of strings"))
        Self.expectContract("POST", "/v1/attachments", badBody)
        let wrongMethod = try await router.send(.get, "/v1/attachments")
        #expect(wrongMethod.response.status == .methodNotAllowed && wrongMethod.response.headers[.allow] == "POST")
        Self.expectContract("GET", "/v1/attachments", wrongMethod)
        await server.stop()
    }

    @Test func aScopedPipelineIsShutDownWhenTheBodyThrows() async throws {
        struct Failed: Error {}
        let scratch = Scratch()
        var configuration = AttachFetchConfiguration()
        configuration.temporaryDirectory = scratch.path
        nonisolated(unsafe) var kept: AttachmentPipeline?
        await #expect(throws: Failed.self) {
            // Not withPipeline: this test is of the library's withAttachmentPipeline itself (it shuts the pipeline down).
            try await withAttachmentPipeline(configuration: configuration) { pipeline in
                kept = pipeline
                throw Failed()
            }
        }
        // A batch on a pipeline that was shut down fails at once, as `cancelled`.
        let pipeline = try #require(kept)
        let batch = await pipeline.process([AttachmentRequest(url: "http://127.0.0.1:1/a.jpg")], deadline: .seconds(5))
        #expect(batch.attachments.first?.reason?.code == .cancelled, "\(batch.attachments.first?.reason?.message ?? "ready")")
    }
}

/// The service's router driven without a socket: a request in, the response and its body out.
/// HummingbirdTesting's router mode does this too, but linking it builds async-http-client,
/// swift-nio-ssl (a second copy of BoringSSL) and swift-nio-http2 for this one test: a fresh
/// debug build takes 205–234 s without them, 299–310 s with them. An error the responder
/// throws reaches the test (the server would answer it); the routes tested answer every error.
struct RouterDriver {
    struct Answer {
        let response: Response
        let body: String
    }

    /// Collects what the response writes.
    private final class Collected: @unchecked Sendable {
        // Sendable: written by the one response being written, read after it has finished.
        var bytes = ByteBuffer()
    }

    private struct Writer: ResponseBodyWriter {
        let collected: Collected
        mutating func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            collected.bytes.writeBuffer(&buffer)
        }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }

    let responder: RouterResponder<ServiceContext>

    func send(_ method: HTTPRequest.Method, _ path: String, body: String? = nil) async throws -> Answer {
        var headers = HTTPFields()
        if let body { headers[.contentLength] = String(body.utf8.count) }
        let request = Request(head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: path, headerFields: headers),
                              body: RequestBody(buffer: ByteBuffer(string: body ?? "")))
        let context = ServiceContext(source: .init(channel: NIOAsyncTestingChannel(), logger: AttachmentPipeline.silentLogger))
        let response = try await responder.respond(to: request, context: context)
        let collected = Collected()
        try await response.body.write(Writer(collected: collected))
        return Answer(response: response, body: String(buffer: collected.bytes))
    }
}
