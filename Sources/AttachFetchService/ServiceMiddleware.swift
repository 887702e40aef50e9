import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// The routes the service knows, for 404 against 405 and for metric labels (never the raw
/// path, so a client cannot make label sets grow).
enum Routes {
    static let methods: [String: [HTTPRequest.Method]] = [
        "/v1/attachments": [.post], "/v1/payloads": [.post],
        "/healthz": [.get, .head], "/readyz": [.get, .head], "/metrics": [.get], "/openapi.json": [.get], "/media": [.get, .head],
        "/": [.get, .head], "/inspector.css": [.get, .head], "/v1/files": [.get],
    ].merging(InspectorPage.scripts.map { ("/" + $0.name, [.get, .head]) }) { listed, _ in listed }

    /// The route a path belongs to (`/media/<name>` → `/media`, `/v1/files/…` → `/v1/files`), or nil.
    static func route(of path: String) -> String? {
        if path.hasPrefix("/media/") { return "/media" }
        if path.hasPrefix("/v1/files/") { return "/v1/files" }
        return methods[path] != nil ? path : nil
    }
}

/// Outermost: every error becomes `{"error": {"code", "message"}}`; one structured log line
/// and the request metrics per request.
struct ErrorsLogsAndMetrics: RouterMiddleware {
    typealias Context = ServiceContext
    let metrics: ServiceMetrics
    /// The configured body limit, for a 413 raised by Hummingbird itself.
    let maxBodyBytes: Int

    func handle(_ request: Request, context: ServiceContext,
                next: (Request, ServiceContext) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let path = request.uri.path
        let route = Routes.route(of: path)
        var response: Response
        if let route, let allowed = Routes.methods[route], !allowed.contains(request.method) {
            response = Self.response(APIError.methodNotAllowed(request.method.rawValue, allowed: allowed.map(\.rawValue)))
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

/// `/v1` routes need `Authorization: Bearer <token>` when tokens are configured. Every token
/// is compared in full, in time that does not depend on where the bytes differ.
struct BearerTokens: RouterMiddleware {
    typealias Context = ServiceContext
    let tokens: [[UInt8]]

    func handle(_ request: Request, context: ServiceContext,
                next: (Request, ServiceContext) async throws -> Response) async throws -> Response {
        guard !tokens.isEmpty, request.uri.path.hasPrefix("/v1/") else { return try await next(request, context) }
        let given = request.headers[.authorization].flatMap { header -> [UInt8]? in
            header.hasPrefix("Bearer ") ? Array(header.utf8.dropFirst(7)) : nil
        }
        guard let given, Self.matchesAny(given, tokens) else { throw APIError.unauthorized }
        return try await next(request, context)
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
