import AttachFetch
import Foundation

/// The bodies the `/v1` routes accept, checked field by field so that a client learns which
/// field is wrong.
enum APIRequests {
    /// `{"requests": [{"url", "identifier"?, "clip"?: {"x","y","width","height"}, "thumbnailTime"?, "role"?}], "deadlineMs"?}`
    /// or `{"urls": [...], "deadlineMs"?}`.
    static func attachments(_ data: Data, maxRequests: Int) throws(APIError) -> (requests: [AttachmentRequest], deadlineMs: Double?) {
        guard let object = try? JSONSerialization.jsonObject(with: data), let body = object as? [String: Any] else {
            throw .invalidRequest("the body is not a JSON object")
        }
        let known: Set<String> = ["requests", "urls", "deadlineMs"]
        if let unknown = body.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalidRequest("unknown field '\(unknown)' (known: requests, urls, deadlineMs)")
        }
        let deadline = try deadlineMs(body["deadlineMs"], field: "deadlineMs")
        var requests: [AttachmentRequest] = []
        switch (body["requests"], body["urls"]) {
        case (let list?, nil):
            guard let items = list as? [Any] else { throw .invalidRequest("requests must be an array") }
            for (index, item) in items.enumerated() {
                requests.append(try request(item, at: "requests[\(index)]"))
            }
        case (nil, let list?):
            guard let items = list as? [Any] else { throw .invalidRequest("urls must be an array of strings") }
            for (index, item) in items.enumerated() {
                guard let url = item as? String else { throw .invalidRequest("urls[\(index)] must be a string") }
                requests.append(AttachmentRequest(url: url))
            }
        case (nil, nil):
            throw .invalidRequest("give requests or urls")
        default:
            throw .invalidRequest("give requests or urls, not both")
        }
        guard !requests.isEmpty else { throw .invalidRequest("requests must not be empty") }
        guard requests.count <= maxRequests else {
            throw .invalidRequest("\(requests.count) requests in one call; at most \(maxRequests)")
        }
        return (requests, deadline)
    }

    private static func request(_ item: Any, at path: String) throws(APIError) -> AttachmentRequest {
        guard let fields = item as? [String: Any] else { throw .invalidRequest("\(path) must be an object") }
        let known: Set<String> = ["url", "identifier", "clip", "thumbnailTime", "role"]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalidRequest("\(path): unknown field '\(unknown)'")
        }
        guard let url = fields["url"] as? String else { throw .invalidRequest("\(path).url must be a string") }
        var request = AttachmentRequest(url: url)
        if let identifier = fields["identifier"] {
            guard let text = identifier as? String, !text.isEmpty else { throw .invalidRequest("\(path).identifier must be a non-empty string") }
            request.identifier = text
        }
        if let clip = fields["clip"] {
            guard let values = clip as? [String: Any], let x = number(values["x"]), let y = number(values["y"]),
                  let width = number(values["width"]), let height = number(values["height"]) else {
                throw .invalidRequest("\(path).clip must be {\"x\", \"y\", \"width\", \"height\"} numbers")
            }
            do {
                request.clip = try ClippingRectangle(x: x, y: y, width: width, height: height)
            } catch {
                throw .invalidRequest("\(path).clip: \(error.message)")
            }
        }
        if let time = fields["thumbnailTime"] {
            guard let seconds = number(time), seconds.isFinite, seconds >= 0 else {
                throw .invalidRequest("\(path).thumbnailTime must be a number of seconds, 0 or more")
            }
            request.options = AttachmentOptions(thumbnailTime: seconds)
        }
        if let role = fields["role"] {
            guard let name = role as? String, let parsed = AttachmentDescriptor.Role(rawValue: name) else {
                throw .invalidRequest("\(path).role must be \"attachment\" or \"avatar\"")
            }
            request.role = parsed
        }
        return request
    }

    /// A deadline in milliseconds: a positive number, when given.
    static func deadlineMs(_ value: Any?, field: String) throws(APIError) -> Double? {
        guard let value else { return nil }
        guard let milliseconds = number(value), milliseconds.isFinite, milliseconds > 0 else {
            throw .invalidRequest("\(field) must be a number of milliseconds greater than 0")
        }
        return milliseconds
    }

    private static func number(_ value: Any?) -> Double? { JSONNumber.value(value) }
}
