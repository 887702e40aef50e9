import AttachFetch
import Foundation
import HTTPTypes

/// Every error the service answers with, as JSON: `{"error": {"code", "message"}}`.
struct APIError: Error, Sendable {
    let status: HTTPResponse.Status
    let code: String
    let message: String
    var headers: HTTPFields = [:]

    static func invalidRequest(_ message: String) -> APIError { .init(status: .badRequest, code: "invalidRequest", message: message) }
    static let unauthorized = APIError(status: .unauthorized, code: "unauthorized",
                                       message: "this route needs Authorization: Bearer <token>", headers: [.wwwAuthenticate: "Bearer"])
    /// A valid request for something this service was not set up to do (encrypting without a
    /// media key): 409, since the same request succeeds on a service with the setting, and
    /// retrying here cannot.
    static func notConfigured(_ message: String) -> APIError { .init(status: .conflict, code: "notConfigured", message: message) }
    static func tooLarge(_ limit: Int) -> APIError {
        .init(status: .contentTooLarge, code: "bodyTooLarge", message: "the request body is over \(limit) bytes")
    }
    static func notFound(_ path: String) -> APIError { .init(status: .notFound, code: "notFound", message: "no route \(path)") }
    static func methodNotAllowed(_ method: String, allowed: [String]) -> APIError {
        .init(status: .methodNotAllowed, code: "methodNotAllowed", message: "\(method) is not allowed here; use \(allowed.joined(separator: " or "))",
              headers: [.allow: allowed.joined(separator: ", ")])
    }
    static let overloaded = APIError(status: .serviceUnavailable, code: "overloaded",
                                     message: "too many batches in flight; retry shortly", headers: [.retryAfter: "1"])
    /// A request body that stalled for the body timeout; the connection closes after it.
    static func requestTimeout(_ timeout: Duration) -> APIError {
        .init(status: .requestTimeout, code: "requestTimeout",
              message: "the request body stalled for \(timeout.wholeMilliseconds) ms",
              headers: [.connection: "close"])
    }
    static let draining = APIError(status: .serviceUnavailable, code: "draining", message: "the service is shutting down")

    /// `{"error": {"code", "message"}}`. Two strings always encode; were that ever to fail, the
    /// answer still says that something went wrong, in a body written by hand.
    var body: String {
        do {
            return try JSONWriter.string(["error": ["code": code, "message": message]]) + "\n"
        } catch {
            return #"{"error":{"code":"internal","message":"the error could not be encoded"}}"# + "\n"
        }
    }
}
