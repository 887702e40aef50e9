@testable import AttachFetch
@testable import AttachFetchService
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceLifecycle
import Testing

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
    static func expectContract(_ method: String, _ path: String, _ response: TestResponse,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        let problems = OpenAPIContract.problems(method: method, path: path, status: Int(response.status.code),
                                                contentType: response.headers[.contentType], body: Data(String(buffer: response.body).utf8))
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
    }

    /// The routes through HummingbirdTesting's router mode: no socket, no port.
    @Test func theRouterAnswersWithoutASocket() async throws {
        let scratch = Scratch()
        let server = try AttachFetchServer(configuration: configuration(scratch), logger: AttachmentPipeline.silentLogger)
        let app = Application(router: server.makeRouter())
        try await app.test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok && String(buffer: response.body).contains("ok"))
                Self.expectContract("GET", "/healthz", response)
            }
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .ok && response.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
                Self.expectContract("GET", "/", response)
            }
            try await client.execute(uri: "/v1/attachments", method: .post, body: ByteBuffer(string: #"{"urls": 3}"#)) { response in
                #expect(response.status == .badRequest && String(buffer: response.body).contains("urls must be an array of strings"))
                Self.expectContract("POST", "/v1/attachments", response)
            }
            try await client.execute(uri: "/v1/attachments", method: .get) { response in
                #expect(response.status == .methodNotAllowed && response.headers[.allow] == "POST")
                Self.expectContract("GET", "/v1/attachments", response)
            }
        }
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
