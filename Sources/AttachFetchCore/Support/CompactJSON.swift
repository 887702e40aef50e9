/// A type that writes its own compact JSON, byte for byte what ``JSONWriter``'s encoder
/// (`JSONEncoder`, sorted keys, slashes unescaped) writes for it: its fields in sorted key order,
/// absent optionals left out.
///
/// Why it exists: a cache hit's answer is one descriptor, and `JSONEncoder`'s walk through
/// `Encodable` (a container and a boxed value per field, then sorting) was 19 % of a hit's
/// CPU in the service (perf, `Benchmarks/service`'s warm run); written directly it is a
/// fraction of that. `JSONWriterTests` holds every writer to `JSONEncoder`'s bytes on thousands
/// of generated documents, so the two cannot drift apart.
package protocol CompactJSONWritable {
    func write(to json: inout CompactJSON)
}

/// The compact JSON being written: values, objects and arrays appended in order, commas put
/// where they belong. A number that is not finite marks it failed (JSON has no such number);
/// the caller then lets `JSONEncoder` refuse the value with its own words.
package struct CompactJSON {
    package private(set) var bytes: [UInt8] = []
    package private(set) var failed = false
    private var needsComma = false

    package init(capacity: Int = 1024) { bytes.reserveCapacity(capacity) }

    /// `JSONEncoder`'s order for sorted keys: their UTF-8 bytes compared one by one.
    package static func keyOrder(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
    }

    /// Marks the writing failed: the value is left to `JSONEncoder`.
    package mutating func fail() { failed = true }

    /// An object whose fields `body` writes, in sorted key order.
    package mutating func object(_ body: (inout CompactJSON) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// An array of `items`, each written by `write`.
    package mutating func array<Items: Sequence>(_ items: Items, _ write: (inout CompactJSON, Items.Element) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        for item in items { write(&self, item) }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A key; its value follows.
    package mutating func key(_ name: String) {
        separate()
        quoted(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    package mutating func string(_ value: String) {
        separate()
        quoted(value)
    }

    package mutating func integer<Value: BinaryInteger>(_ value: Value) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    /// As `JSONEncoder` writes a `Double`: its shortest round-trip form, without a trailing `.0`.
    package mutating func number(_ value: Double) {
        separate()
        guard value.isFinite else {
            failed = true
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    package mutating func boolean(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    package mutating func value(_ value: some CompactJSONWritable) { value.write(to: &self) }

    // Fields: a key and its value, left out when the value is absent.
    package mutating func field(_ name: String, _ value: String?) {
        if let value { key(name); string(value) }
    }

    package mutating func field<Value: BinaryInteger>(_ name: String, _ value: Value?) {
        if let value { key(name); integer(value) }
    }

    package mutating func field(_ name: String, _ value: Double?) {
        if let value { key(name); number(value) }
    }

    package mutating func field(_ name: String, _ value: Bool?) {
        if let value { key(name); boolean(value) }
    }

    package mutating func field(_ name: String, _ value: (some CompactJSONWritable)?) {
        if let value { key(name); value.write(to: &self) }
    }

    package mutating func field<Value: RawRepresentable>(_ name: String, _ value: Value?) where Value.RawValue == String {
        if let value { key(name); string(value.rawValue) }
    }

    /// A string, escaped as `JSONEncoder` escapes it: quote, backslash and the control
    /// characters; everything else (slashes, DEL, any Unicode) as it is.
    private mutating func quoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var start = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
