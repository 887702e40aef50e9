import AttachFetch
import HTTPTypes
import Hummingbird
import NIOCore

/// The service's routes, registered from the one table (``Routes``) with the token in front of
/// every route that is not public.
extension AttachFetchServer {
    /// The service's routes and middleware, as `run` serves them (internal: the tests drive it
    /// without a socket).
    func makeRouter() -> Router<ServiceContext> {
        let router = Router(context: ServiceContext.self)
        // The server span (a child of the caller's `traceparent`) around everything; its
        // context goes back in the answer. No-ops unless a tracer was bootstrapped.
        router.add(middleware: TracingMiddleware(redactingQueryParameters: Set(URLRedaction.spelledParameters)))
        router.add(middleware: TraceResponseHeaders())
        router.add(middleware: ErrorsLogsAndMetrics(metrics: metrics, maxBodyBytes: configuration.maxBodyBytes))
        let tokens = BearerTokens(tokens: configuration.tokens.map { Array($0.utf8) })
        let add = { (route: ServiceRoute, method: HTTPRequest.Method, handler: @escaping Handler) in
            Self.add(route, method, to: router, tokens: tokens, handler: handler)
        }
        add(Routes.healthz, .get) { _, _ in try Self.json(["status": "ok"]) }
        add(Routes.healthz, .head) { _, _ in Response(status: .ok) }
        add(Routes.readyz, .get) { _, _ in try await self.ready() }
        add(Routes.readyz, .head) { _, _ in _ = try await self.ready(); return Response(status: .ok) }
        add(Routes.metrics, .get) { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                     body: .init(byteBuffer: ByteBuffer(string: self.metrics.text(transfers: self.pipeline.transfersInFlight, connections: self.pipeline.originConnections, breakers: self.pipeline.originBreakers, objectStoreRequests: self.pipeline.objectStoreRequests, transferPace: self.pipeline.transferPace, traces: self.traces?.queue))))
        }
        // The contract (docs/service.md#the-openapi-document): without a token, like the health routes.
        add(Routes.openapi, .get) { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"],
                     body: .init(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_json)))
        }
        add(Routes.attachments, .post) { request, context in try await self.attachments(request, context) }
        add(Routes.payloads, .post) { request, context in try await self.payloads(request, context) }
        let publicBase = configuration.pipeline.publish?.baseURL ?? configuration.pipeline.objectStore?.baseURL
        for (route, file) in zip(Routes.inspector, InspectorPage.files) {
            let headers = InspectorPage.headers(contentType: file.mediaType + "; charset=utf-8", publicBase: publicBase)
            add(route, .get) { _, _ in Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: file.text))) }
            add(route, .head) { _, _ in Response(status: .ok, headers: headers) }
        }
        let batchFiles = BatchFileRoute(root: files.root)
        add(Routes.files, .get) { request, context in
            // The router's components, raw: a name with encoded characters is not a batch file's name.
            try batchFiles.respond(components: ["bucket", "batch", "name"].map { Substring(context.parameters.get($0) ?? "") },
                                   request: request)
        }
        let media = configuration.pipeline.publish.map { MediaFiles(directory: $0.directory) }
        for method in Routes.media.methods {
            add(Routes.media, method) { request, context in
                guard let media else { throw APIError.notFound(request.uri.path) }
                // The router's component, raw: a name with encoded characters is not a published name.
                return try media.respond(name: context.parameters.get("name") ?? "", request: request)
            }
        }
        return router
    }

    typealias Handler = @Sendable (Request, ServiceContext) async throws -> Response

    /// The only way a route is registered: `route`'s pattern for `method`, its handler behind the
    /// token unless the route is public. Deny by default: a route not in ``Routes`` cannot be added.
    private static func add(_ route: ServiceRoute, _ method: HTTPRequest.Method, to router: Router<ServiceContext>,
                            tokens: BearerTokens, handler: @escaping Handler) {
        precondition(Routes.all.contains(route) && route.methods.contains(method), "\(method) \(route.pattern) is not in Routes")
        router.on(RouterPath(route.pattern), method: method) { request, context in
            try tokens.check(request, for: route)
            return try await handler(request, context)
        }
    }
}
