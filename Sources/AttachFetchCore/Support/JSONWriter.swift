#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one writer of the project's JSON: the CLI's output, the service's answers, the stored
/// results. Foundation's `JSONEncoder` with sorted keys and unescaped slashes, compact or
/// pretty; the descriptor and the batch document write their compact form themselves, to the
/// same bytes (``CompactJSONWritable`` says why). It throws rather than write a placeholder: a document that cannot be encoded (a
/// non-finite number) is an error the caller reports, never an empty object.
public enum JSONWriter {
    /// Compact (one line) or indented.
    public enum Layout: Sendable {
        /// One line, no spaces.
        case compact
        /// Indented, one key a line.
        case pretty
    }

    /// A value `JSONEncoder` refused; names the value and why.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// `JSONEncoder`'s own words.
        public let description: String
    }

    // JSONEncoder's options are only read after these are made (encoders are safe to share).
    private static let compact = encoder([.sortedKeys, .withoutEscapingSlashes])
    private static let pretty = encoder([.sortedKeys, .withoutEscapingSlashes, .prettyPrinted])

    private static func encoder(_ formatting: JSONEncoder.OutputFormatting) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting
        return encoder
    }

    /// `value` as UTF-8 JSON.
    public static func data<T: Encodable>(_ value: T, layout: Layout = .compact) throws(Failure) -> Data {
        if layout == .compact, let bytes = compactBytes(value) { return Data(bytes) }
        do {
            return try (layout == .compact ? compact : pretty).encode(value)
        } catch {
            throw Failure(description: "cannot encode \(T.self) as JSON: \(error)")
        }
    }

    /// `value` as JSON text.
    public static func string<T: Encodable>(_ value: T, layout: Layout = .compact) throws(Failure) -> String {
        if layout == .compact, let bytes = compactBytes(value) { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: try data(value, layout: layout), as: UTF8.self)
    }

    /// The bytes of a type that writes its own compact JSON (``CompactJSONWritable``: the
    /// descriptor and the batch document, the answers to cache hits); nil for any other type,
    /// or when the value holds a number JSON cannot carry (the encoder then says why).
    private static func compactBytes<T: Encodable>(_ value: T) -> [UInt8]? {
        guard let writable = value as? any CompactJSONWritable else { return nil }
        var json = CompactJSON()
        writable.write(to: &json)
        return json.failed ? nil : json.bytes
    }
}

/// Any JSON value, for JSON a document carries as given (a push payload inside the service's
/// answer): decoded with `JSONDecoder`, written again by encoding. Integers stay integers
/// (`Int64`, else `UInt64`); other numbers are `Double`s.
public enum JSONValue: Codable, Equatable, Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer that fits `Int64`.
    case integer(Int64)
    /// An integer above `Int64.max` that fits `UInt64`.
    case unsigned(UInt64)
    /// Any other number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])

    /// Reads a JSON text (any value, not only an object or array).
    public init(json data: Data) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: data)
    }

    /// Reads whichever JSON value the decoder holds.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(UInt64.self) {
            self = .unsigned(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Writes the value as the JSON it is.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .unsigned(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
