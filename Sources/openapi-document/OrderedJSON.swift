/// A JSON value that keeps its objects' member order and its numbers' text, so that
/// openapi.json can be read, changed where this tool writes it, and written back with every
/// other byte as it was. `text` is the document's own format: Python's `json.dumps(value,
/// indent=2)` (two-space indentation, `": "` after a key, non-ASCII escaped as `\uXXXX`).
/// Foundation's JSONSerialization keeps neither the order nor the numbers' text.
indirect enum OrderedJSON: Equatable {
    case object([Member])
    case array([OrderedJSON])
    case string(String)
    /// The number as written.
    case number(String)
    case bool(Bool)
    case null

    struct Member: Equatable {
        var key: String
        var value: OrderedJSON
    }

    /// The member named `key` of an object; setting nil removes it, setting a new key appends it.
    subscript(key: String) -> OrderedJSON? {
        get {
            guard case .object(let members) = self else { return nil }
            return members.first { $0.key == key }?.value
        }
        set {
            guard case .object(var members) = self else { return }
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
            }
            self = .object(members)
        }
    }

    var members: [Member] {
        if case .object(let members) = self { return members }
        return []
    }

    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The value in the document's format, without a final newline.
    func text(indent: Int = 0) -> String {
        let inner = String(repeating: " ", count: indent + 2), outer = String(repeating: " ", count: indent)
        switch self {
        case .object(let members) where members.isEmpty: return "{}"
        case .object(let members):
            return "{\n" + members.map { inner + Self.quoted($0.key) + ": " + $0.value.text(indent: indent + 2) }
                .joined(separator: ",\n") + "\n" + outer + "}"
        case .array(let items) where items.isEmpty: return "[]"
        case .array(let items):
            return "[\n" + items.map { inner + $0.text(indent: indent + 2) }.joined(separator: ",\n") + "\n" + outer + "]"
        case .string(let value): return Self.quoted(value)
        case .number(let literal): return literal
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        }
    }

    /// A string literal as Python's json module writes it with `ensure_ascii`.
    static func quoted(_ value: String) -> String {
        var out = "\""
        for unit in value.utf16 {
            switch unit {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x08: out += "\\b"
            case 0x0C: out += "\\f"
            case 0x20...0x7E: out.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            default:
                let hex = String(unit, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return out + "\""
    }

    /// Reads a whole JSON text.
    init(parsing text: String) throws {
        var reader = Reader(bytes: Array(text.utf8))
        self = try reader.value()
        reader.skipSpace()
        guard reader.at == reader.bytes.count else { throw reader.error("text after the value") }
    }

    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    private struct Reader {
        let bytes: [UInt8]
        var at = 0

        func error(_ what: String) -> ParseError { ParseError(description: "JSON: \(what) at byte \(at)") }

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[at]) { at += 1 }
        }

        mutating func expect(_ literal: String) throws {
            let expected = Array(literal.utf8)
            guard bytes.count - at >= expected.count, Array(bytes[at..<at + expected.count]) == expected else { throw error("expected \(literal)") }
            at += expected.count
        }

        mutating func value() throws -> OrderedJSON {
            skipSpace()
            guard at < bytes.count else { throw error("end of text") }
            switch bytes[at] {
            case UInt8(ascii: "{"):
                at += 1
                var members: [Member] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(members) }
                while true {
                    skipSpace()
                    let key = try string()
                    skipSpace()
                    try expect(":")
                    members.append(Member(key: key, value: try value()))
                    skipSpace()
                    guard at < bytes.count else { throw error("an unclosed object") }
                    at += 1
                    if bytes[at - 1] == UInt8(ascii: "}") { return .object(members) }
                    guard bytes[at - 1] == UInt8(ascii: ",") else { throw error("expected , or }") }
                }
            case UInt8(ascii: "["):
                at += 1
                var items: [OrderedJSON] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
                while true {
                    items.append(try value())
                    skipSpace()
                    guard at < bytes.count else { throw error("an unclosed array") }
                    at += 1
                    if bytes[at - 1] == UInt8(ascii: "]") { return .array(items) }
                    guard bytes[at - 1] == UInt8(ascii: ",") else { throw error("expected , or ]") }
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "n"): try expect("null"); return .null
            default:
                let start = at
                while at < bytes.count, Array("+-0123456789.eE".utf8).contains(bytes[at]) { at += 1 }
                guard at > start else { throw error("an unexpected character") }
                return .number(String(decoding: bytes[start..<at], as: UTF8.self))
            }
        }

        mutating func string() throws -> String {
            guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw error("expected a string") }
            at += 1
            var units: [UInt16] = []
            while at < bytes.count, bytes[at] != UInt8(ascii: "\"") {
                if bytes[at] != UInt8(ascii: "\\") {
                    // Copy a run of plain UTF-8 as UTF-16.
                    let start = at
                    while at < bytes.count, bytes[at] != UInt8(ascii: "\""), bytes[at] != UInt8(ascii: "\\") { at += 1 }
                    units += String(decoding: bytes[start..<at], as: UTF8.self).utf16
                    continue
                }
                at += 1
                guard at < bytes.count else { break }
                let escaped = bytes[at]
                at += 1
                switch escaped {
                case UInt8(ascii: "n"): units.append(0x0A)
                case UInt8(ascii: "r"): units.append(0x0D)
                case UInt8(ascii: "t"): units.append(0x09)
                case UInt8(ascii: "b"): units.append(0x08)
                case UInt8(ascii: "f"): units.append(0x0C)
                case UInt8(ascii: "u"):
                    guard at + 4 <= bytes.count, let unit = UInt16(String(decoding: bytes[at..<at + 4], as: UTF8.self), radix: 16) else {
                        throw error("a bad \\u escape")
                    }
                    units.append(unit)
                    at += 4
                default: units.append(UInt16(escaped))
                }
            }
            guard at < bytes.count else { throw error("an unclosed string") }
            at += 1
            return String(decoding: units, as: UTF16.self)
        }
    }
}
