import Foundation
import Synchronization
import Testing

/// The service's OpenAPI document (Sources/AttachFetchService/OpenAPI/openapi.json), and every
/// answer the tests receive from a service checked against it: the status documented for the
/// route and method, the content type documented for that status, and the body valid against
/// its schema. `Exchange.send` calls `check` for each answer from a port `RunningServer` or
/// `launchServe` started, so every service test is also a contract test.
package enum OpenAPIContract {
    package static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/AttachFetchService/OpenAPI/openapi.json").path

    package nonisolated(unsafe) static let document: [String: Any] = {
        // Read once; never written afterwards, so shared reads are safe.
        guard let data = FileManager.default.contents(atPath: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        return object
    }()

    /// Ports of the services the tests started: only their answers are checked.
    package static let servicePorts = Mutex<Set<Int>>([])

    package static var paths: [String: [String: Any]] { document["paths"] as? [String: [String: Any]] ?? [:] }

    /// Records an issue for each way the answer breaks the document.
    package static func check(method: String, url: String, status: Int, contentType: String?, body: Data,
                      sourceLocation: SourceLocation = #_sourceLocation) {
        guard let components = URLComponents(string: url), let port = components.port,
              servicePorts.withLock({ $0.contains(port) }) else { return }
        for problem in problems(method: method, path: components.percentEncodedPath, status: status, contentType: contentType, body: body) {
            Issue.record("\(method) \(components.percentEncodedPath) → \(status): \(problem)", sourceLocation: sourceLocation)
        }
    }

    /// The template of the document's paths that `path` falls under, if any.
    package static func template(of path: String) -> String? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        return paths.keys.sorted().first { template in
            let parts = template.split(separator: "/", omittingEmptySubsequences: false)
            return parts.count == segments.count && zip(parts, segments).allSatisfy { part, segment in
                part == segment || (part.hasPrefix("{") && part.hasSuffix("}") && !segment.isEmpty)
            }
        }
    }

    package static func problems(method: String, path: String, status: Int, contentType: String?, body: Data) -> [String] {
        let errorSchema: [String: Any] = ["$ref": "#/components/schemas/Error"]
        guard let template = template(of: path), let operation = paths[template]?[method.lowercased()] as? [String: Any] else {
            // Unknown routes and methods: a 404 or 405 JSON error.
            guard status == 404 || status == 405 else { return ["the path and method are not in the document"] }
            return method == "HEAD" ? [] : validateJSON(body, against: errorSchema)
        }
        let responses = operation["responses"] as? [String: Any] ?? [:]
        guard let response = (responses[String(status)] ?? responses["default"]) as? [String: Any] else {
            // A method refused on a known route, or a route-independent refusal of the body.
            if status == 405 || status == 413 || status == 408 { return method == "HEAD" ? [] : validateJSON(body, against: errorSchema) }
            return ["status \(status) is not documented"]
        }
        guard let content = response["content"] as? [String: Any], method != "HEAD", !body.isEmpty || status != 304 else { return [] }
        let mediaType = (contentType ?? "").split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        guard let entry = (content[mediaType] ?? content["*/*"]) as? [String: Any] else {
            return ["content type '\(contentType ?? "none")' is not documented (\(content.keys.sorted()))"]
        }
        let schema = entry["schema"] as? [String: Any] ?? [:]
        switch mediaType {
        case "application/json":
            return validateJSON(body, against: schema)
        case "application/x-ndjson":
            let lines = body.split(separator: UInt8(ascii: "\n"))
            var found: [String] = []
            for (index, line) in lines.enumerated() {
                let last = index == lines.count - 1
                found += validateJSON(Data(line), against: ["$ref": last ? "#/components/schemas/StreamSummary" : "#/components/schemas/AttachmentDescriptor"])
                    .map { "line \(index + 1): \($0)" }
            }
            return found
        default:
            return []
        }
    }

    package static func validateJSON(_ body: Data, against schema: [String: Any]) -> [String] {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: body) else {
            return ["the body is not JSON: \(String(decoding: body.prefix(200), as: UTF8.self))"]
        }
        return validate(value, schema, at: "$")
    }

    /// A JSON value as parsed: booleans, numbers and strings kept apart (Foundation's
    /// JSONSerialization gives NSNumber for both booleans and numbers on Linux).
    package indirect enum JSONValue: Decodable, CustomStringConvertible {
        case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

        package init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() { self = .null }
            else if let value = try? container.decode(Bool.self) { self = .bool(value) }
            else if let value = try? container.decode(Double.self) { self = .number(value) }
            else if let value = try? container.decode(String.self) { self = .string(value) }
            else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
            else { self = .object(try container.decode([String: JSONValue].self)) }
        }

        package var description: String {
            switch self {
            case .null: return "null"
            case .bool(let value): return "\(value)"
            case .number(let value): return "\(value)"
            case .string(let value): return "\"\(value.prefix(80))\""
            case .array(let items): return "[\(items.count) items]"
            case .object(let members): return "{\(members.keys.sorted().prefix(6).joined(separator: ", "))}"
            }
        }

        package func equals(_ literal: Any) -> Bool {
            switch self {
            case .string(let value): return (literal as? String) == value
            case .bool(let value): return (literal as? Bool) == value && !(literal is String)
            case .number(let value): return (literal as? Double) == value
            default: return false
            }
        }
    }

    /// The subset of JSON Schema (2020-12, as OpenAPI 3.1 uses it) the document uses.
    package static func validate(_ value: JSONValue, _ schema: [String: Any], at location: String) -> [String] {
        if let reference = schema["$ref"] as? String {
            let name = String(reference.split(separator: "/").last ?? "")
            guard let target = ((document["components"] as? [String: Any])?["schemas"] as? [String: Any])?[name] as? [String: Any] else {
                return ["\(location): unknown schema \(reference)"]
            }
            return validate(value, target, at: location)
        }
        var problems: [String] = []
        // A type or a list of types ("type": ["string", "null"]): the value is one of them.
        if let type = schema["type"] as? String, !matches(value, type) {
            return ["\(location): \(value) is not \(type)"]
        }
        if let types = schema["type"] as? [String], !types.contains(where: { matches(value, $0) }) {
            return ["\(location): \(value) is none of \(types.joined(separator: ", "))"]
        }
        if let allowed = schema["enum"] as? [Any], !allowed.contains(where: { value.equals($0) }) {
            problems.append("\(location): \(value) is not one of \(allowed)")
        }
        switch value {
        case .string(let string):
            if let minimum = schema["minLength"] as? Int, string.count < minimum { problems.append("\(location): shorter than \(minimum)") }
            if let pattern = schema["pattern"] as? String, string.range(of: pattern, options: .regularExpression) == nil {
                problems.append("\(location): '\(string)' does not match \(pattern)")
            }
        case .number(let number):
            if let minimum = bound(schema["minimum"]), number < minimum { problems.append("\(location): under \(minimum)") }
            if let minimum = bound(schema["exclusiveMinimum"]), number <= minimum { problems.append("\(location): not over \(minimum)") }
            if let maximum = bound(schema["maximum"]), number > maximum { problems.append("\(location): over \(maximum)") }
            if let maximum = bound(schema["exclusiveMaximum"]), number >= maximum { problems.append("\(location): not under \(maximum)") }
        case .object(let object):
            let properties = schema["properties"] as? [String: Any] ?? [:]
            for name in schema["required"] as? [String] ?? [] where object[name] == nil {
                problems.append("\(location): '\(name)' is required")
            }
            for (name, member) in object.sorted(by: { $0.key < $1.key }) {
                if let property = properties[name] as? [String: Any] {
                    problems += validate(member, property, at: "\(location).\(name)")
                } else if let additional = schema["additionalProperties"] as? [String: Any] {
                    problems += validate(member, additional, at: "\(location).\(name)")
                } else if (schema["additionalProperties"] as? Bool) == false {
                    problems.append("\(location): '\(name)' is not in the document")
                }
            }
        case .array(let array):
            if let minimum = schema["minItems"] as? Int, array.count < minimum { problems.append("\(location): fewer than \(minimum) items") }
            if let maximum = schema["maxItems"] as? Int, array.count > maximum { problems.append("\(location): more than \(maximum) items") }
            if let items = schema["items"] as? [String: Any] {
                for (index, item) in array.enumerated() { problems += validate(item, items, at: "\(location)[\(index)]") }
            }
        default:
            break
        }
        if let choices = schema["oneOf"] as? [[String: Any]] {
            let passing = choices.filter { validate(value, $0, at: location).isEmpty }.count
            if passing != 1 { problems.append("\(location): matches \(passing) of oneOf's \(choices.count) schemas") }
        }
        return problems
    }

    /// A numeric keyword's value: a number from the document (NSNumber) or a literal (Int or Double).
    private static func bound(_ value: Any?) -> Double? {
        if let value = value as? Int { return Double(value) }
        return value as? Double
    }

    private static func matches(_ value: JSONValue, _ type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null), ("number", .number): return true
        case ("integer", .number(let number)): return number.rounded() == number
        default: return false
        }
    }
}
