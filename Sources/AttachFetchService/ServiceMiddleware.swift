import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// One route the service serves: the router's pattern, the methods it answers, and whether it
/// is open without the token.
package struct ServiceRoute: Sendable, Hashable {
    /// The router's path (`/media/{name}`).
    package let pattern: String
    /// The label in metrics and logs: the pattern up to its first parameter (`/media`).
    let label: String
    package let methods: [HTTPRequest.Method]
    /// Open without the token. Every other route needs it: deny by default.
    let isPublic: Bool

    init(_ pattern: String, _ methods: [HTTPRequest.Method], public isPublic: Bool = false) {
        self.pattern = pattern
        self.methods = methods
        self.isPublic = isPublic
        let fixed = pattern.split(separator: "/").prefix { !$0.hasPrefix("{") }
        label = "/" + fixed.joined(separator: "/")
    }
}

/// The routes the service knows, defined once: the router registers exactly these (through
/// ``AttachFetchServer/add(_:_:to:tokens:handler:)``), the token check reads `isPublic` of the
/// route the router resolved, and metrics label a request by that route (never the raw path,
/// so a client cannot make label sets grow). openapi.json's paths are written from it
/// (`openapi-document`).
package enum Routes {
    static let attachments = ServiceRoute("/v1/attachments", [.post])
    static let payloads = ServiceRoute("/v1/payloads", [.post])
    static let files = ServiceRoute("/v1/files/{bucket}/{batch}/{name}", [.get])
    static let healthz = ServiceRoute("/healthz", [.get, .head], public: true)
    static let readyz = ServiceRoute("/readyz", [.get, .head], public: true)
    static let metrics = ServiceRoute("/metrics", [.get], public: true)
    static let openapi = ServiceRoute("/openapi.json", [.get], public: true)
    static let media = ServiceRoute("/media/{name}", [.get, .head], public: true)
    /// The inspector's page and its static files.
    package static let inspector = InspectorPage.files.map { ServiceRoute("/" + $0.path, [.get, .head], public: true) }

    package static let all = [attachments, payloads, files, healthz, readyz, metrics, openapi, media] + inspector

    private static let byPattern = Dictionary(all.map { ($0.pattern, $0) }) { first, _ in first }
    private static let byLabel = Dictionary(all.map { ($0.label, $0) }) { first, _ in first }

    /// The route the router resolved, from the pattern it records (`context.endpointPath`).
    static func route(pattern: String?) -> ServiceRoute? { pattern.flatMap { byPattern[$0] } }

    /// The route an exact path names (`/media/<name>` → `/media`), or nil; only for answering 405
    /// before routing, which refuses and never runs work.
    static func route(of path: String) -> ServiceRoute? {
        if let route = byLabel[path], !route.pattern.contains("{") { return route }
        return all.first { $0.pattern.contains("{") && path.hasPrefix($0.label + "/") }
    }
}

/// Inside the tracing middleware (so that its log line and metrics carry the request's span),
/// around everything else: every error becomes `{"error": {"code", "message"}}`; one
/// structured log line and the request metrics per request.
struct ErrorsLogsAndMetrics: RouterMiddleware {
    typealias Context = ServiceContext
    let metrics: ServiceMetrics
    /// The configured body limit, for a 413 raised by Hummingbird itself.
    let maxBodyBytes: Int

    func handle(_ request: Request, context: ServiceContext,
                next: (Request, ServiceContext) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let path = request.uri.path
        var response: Response
        var label: String?
        if let route = Routes.route(of: path), !route.methods.contains(request.method) {
            label = route.label
            response = Self.response(APIError.methodNotAllowed(request.method.rawValue, allowed: route.methods.map(\.rawValue)))
        } else {
            do {
                response = try await next(request, context)
            } catch let error as APIError {
                response = Self.response(error)
            } catch let error as HTTPError {
                switch error.status {
                case .notFound: response = Self.response(.notFound(path))
                case .contentTooLarge: response = Self.response(.tooLarge(maxBodyBytes))
                default: response = Self.response(APIError(status: error.status, code: "httpError", message: error.body ?? "\(error.status)"))
                }
            } catch is CancellationError {
                // The client went away: its batch was cancelled and its files removed.
                response = Self.response(APIError(status: .init(code: 499, reasonPhrase: "Client Closed Request"),
                                                  code: "cancelled", message: "the client closed the connection"))
            } catch {
                response = Self.response(APIError(status: .internalServerError, code: "internal", message: "\(error)"))
            }
        }
        // The route the router resolved (it recorded the pattern in the context's shared box); for
        // a path it did not resolve, the route whose prefix it has (`/media/a/b` → `/media`), a
        // label only: nothing was served.
        let route = label ?? Routes.route(pattern: context.endpointPath)?.label ?? Routes.route(of: path)?.label
        let elapsed = ContinuousClock.now - started
        metrics.request(route: route ?? "unknown", status: response.status.code, duration: elapsed)
        var metadata: Logger.Metadata = [
            "method": "\(request.method.rawValue)", "route": "\(route ?? "unknown")",
            "status": "\(response.status.code)", "ms": "\(elapsed.wholeMilliseconds)",
        ]
        let counts = context.outcome.byStatus
        if !counts.isEmpty {
            metadata["attachments"] = .dictionary(counts.mapValues { .stringConvertible($0) })
        }
        context.logger.info("request", metadata: metadata)
        return response
    }

    static func response(_ error: APIError) -> Response {
        var headers = error.headers
        headers[.contentType] = "application/json"
        return Response(status: error.status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: error.body)))
    }
}

/// The bearer tokens (`--token-file`), checked inside the handler of every route that is not
/// public, so the decision is made on the route the router resolved, never on the raw path.
/// Every token is compared in full, in time that does not depend on where the bytes differ.
struct BearerTokens: Sendable {
    let tokens: [[UInt8]]

    /// Throws `unauthorized` unless `route` is public, no tokens are configured, or the request
    /// carries one of them.
    func check(_ request: Request, for route: ServiceRoute) throws(APIError) {
        guard !route.isPublic, !tokens.isEmpty else { return }
        let given = request.headers[.authorization].flatMap { header -> [UInt8]? in
            header.hasPrefix("Bearer ") ? Array(header.utf8.dropFirst(7)) : nil
        }
        guard let given, Self.matchesAny(given, tokens) else { throw APIError.unauthorized }
    }

    static func matchesAny(_ given: [UInt8], _ tokens: [[UInt8]]) -> Bool {
        var matched: UInt8 = 0
        for token in tokens {
            // The lengths compared whole: a byte of their difference would miss lengths that
            // differ by a multiple of 256 (a token followed by 256 more bytes would match).
            var difference: UInt8 = token.count == given.count ? 0 : 1
            for index in 0..<token.count {
                difference |= token[index] ^ (index < given.count ? given[index] : 0)
            }
            matched |= difference == 0 ? 1 : 0
        }
        return matched == 1
    }
}
