/// Compact JSON with sorted keys and unescaped slashes — byte for byte what Foundation's
/// `JSONEncoder` writes with `[.sortedKeys, .withoutEscapingSlashes]` — with less work.
///
/// Why it exists: the service answers a cache hit in well under a millisecond, and Foundation's
/// encoder was the largest user-space cost of that answer (it tracks coding paths, checks every
/// value for its special types, keeps a dictionary per object). This one builds a small tree
/// over one buffer of already-written scalars and sorts each object's keys once. Under the
/// service's warm load, encoding went from ~14 % to ~10 % of its CPU: what is left is mostly the
/// `Encodable` conformances' own generic calls, which any `Encoder` pays.
///
/// It writes what a value's `Encodable` conformance says, so it suits plain value types: structs,
/// string-backed enums, strings, numbers, booleans, arrays, string-keyed dictionaries. Foundation
/// gives `Date`, `Data`, `URL` and `Decimal` formats of its own, which this does not; the
/// project's documents hold none of them (its tests compare both encoders on every document type).
public enum SortedJSON {
    /// Non-finite numbers throw, as they do in `JSONEncoder` by default.
    public struct NonFiniteNumber: Error, CustomStringConvertible {
        /// Names the number that cannot be written.
        public let description: String
    }

    /// Encodes `value` as compact JSON with sorted keys and unescaped slashes.
    public static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = TreeEncoder(scalars: Scalars())
        try value.encode(to: encoder)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encoder.scalars.bytes.count + 256)
        write(encoder.node ?? .object(ObjectBox()), scalars: encoder.scalars.bytes, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: The tree

    /// Every scalar of one document, written as JSON one after another: a node points at its
    /// bytes here (one growing buffer instead of a string per value).
    fileprivate final class Scalars {
        var bytes: [UInt8] = []

        init() { bytes.reserveCapacity(1024) }

        func text(_ string: String) -> Node {
            let start = bytes.count
            bytes.append(contentsOf: string.utf8)
            return .text(start..<bytes.count)
        }

        func integer<I: BinaryInteger>(_ value: I) -> Node { text(String(value)) }

        func quoted(_ string: String) -> Node {
            let start = bytes.count
            SortedJSON.writeString(string, into: &bytes)
            return .text(start..<bytes.count)
        }

        /// Foundation writes a floating-point number as its description without a trailing ".0".
        func number<F: BinaryFloatingPoint & CustomStringConvertible>(_ value: F) throws -> Node {
            guard value.isFinite else { throw NonFiniteNumber(description: "\(value) is not a JSON number") }
            let text = value.description
            return self.text(text.hasSuffix(".0") ? String(text.dropLast(2)) : text)
        }

        func nested<T: Encodable>(_ value: T) throws -> Node {
            let encoder = TreeEncoder(scalars: self)
            try value.encode(to: encoder)
            return encoder.node ?? .object(ObjectBox())
        }
    }

    /// Not `indirect`: no case holds a node by value, and an indirect case is a heap box per
    /// node (a tenth of the encoding's instructions went to them).
    fileprivate enum Node {
        /// A scalar, already written as JSON: its bytes in `Scalars`.
        case text(Range<Int>)
        case object(ObjectBox)
        case array(ArrayBox)
        /// An encoder handed out before its value was written (`superEncoder`).
        case later(TreeEncoder)
    }

    fileprivate final class ObjectBox {
        var entries: [(key: String, node: Node)] = []
    }

    fileprivate final class ArrayBox {
        var items: [Node] = []
    }

    private static func write(_ node: Node, scalars: [UInt8], into bytes: inout [UInt8]) {
        switch node {
        case .text(let range):
            bytes.append(contentsOf: scalars[range])
        case .later(let encoder):
            write(encoder.node ?? .object(ObjectBox()), scalars: scalars, into: &bytes)
        case .array(let box):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in box.items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(item, scalars: scalars, into: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let box):
            // Keys in UTF-8 byte order, as Foundation sorts them; a key written twice keeps its
            // last value (Foundation keeps objects in a dictionary).
            let order = box.entries.indices.sorted { left, right in
                let a = box.entries[left].key, b = box.entries[right].key
                if a == b { return left < right }
                return precedes(a, b)
            }
            bytes.append(UInt8(ascii: "{"))
            var first = true
            for (position, index) in order.enumerated() {
                let entry = box.entries[index]
                if position + 1 < order.count, box.entries[order[position + 1]].key == entry.key { continue }
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                writeString(entry.key, into: &bytes)
                bytes.append(UInt8(ascii: ":"))
                write(entry.node, scalars: scalars, into: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// UTF-8 byte order, compared in place where both strings are contiguous (native ones are):
    /// through the `UTF8View`s' indices the keys' sorting was a sixth of the encoding's work.
    private static func precedes(_ a: String, _ b: String) -> Bool {
        let inPlace = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in x.lexicographicallyPrecedes(y) }
        }
        return (inPlace ?? nil) ?? a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    fileprivate static func writeString(_ string: String, into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings (paths, URLs, names) need no escape: checked and copied in place, whole
        // (byte by byte through the `UTF8View`, strings were a fifth of the encoding's work).
        let copied = string.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
            guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied == true {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    // MARK: The encoder

    fileprivate final class TreeEncoder: Encoder {
        let scalars: Scalars
        var node: Node?

        init(scalars: Scalars) { self.scalars = scalars }

        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            if case .object(let box)? = node { return KeyedEncodingContainer(KeyedWriter<Key>(box: box, scalars: scalars)) }
            let box = ObjectBox()
            node = .object(box)
            return KeyedEncodingContainer(KeyedWriter<Key>(box: box, scalars: scalars))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            if case .array(let box)? = node { return UnkeyedWriter(box: box, scalars: scalars) }
            let box = ArrayBox()
            node = .array(box)
            return UnkeyedWriter(box: box, scalars: scalars)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { SingleValueWriter(encoder: self) }
    }

    fileprivate struct KeyedWriter<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let box: ObjectBox
        let scalars: Scalars
        var codingPath: [any CodingKey] { [] }

        private func put(_ node: Node, _ key: Key) { box.entries.append((key.stringValue, node)) }

        mutating func encodeNil(forKey key: Key) throws { put(scalars.text("null"), key) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { put(scalars.text(value ? "true" : "false"), key) }
        mutating func encode(_ value: String, forKey key: Key) throws { put(scalars.quoted(value), key) }
        mutating func encode(_ value: Double, forKey key: Key) throws { put(try scalars.number(value), key) }
        mutating func encode(_ value: Float, forKey key: Key) throws { put(try scalars.number(value), key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { put(scalars.integer(value), key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { put(scalars.integer(value), key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { put(scalars.integer(value), key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { put(scalars.integer(value), key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { put(scalars.integer(value), key) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { put(scalars.integer(value), key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { put(scalars.integer(value), key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { put(scalars.integer(value), key) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { put(scalars.integer(value), key) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { put(scalars.integer(value), key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { put(try scalars.nested(value), key) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                            forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let nested = ObjectBox()
            put(.object(nested), key)
            return KeyedEncodingContainer(KeyedWriter<NestedKey>(box: nested, scalars: scalars))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = ArrayBox()
            put(.array(nested), key)
            return UnkeyedWriter(box: nested, scalars: scalars)
        }

        mutating func superEncoder() -> any Encoder { superEncoder(named: "super") }
        mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key.stringValue) }

        private func superEncoder(named name: String) -> any Encoder {
            let encoder = TreeEncoder(scalars: scalars)
            box.entries.append((name, .later(encoder)))
            return encoder
        }
    }

    fileprivate struct UnkeyedWriter: UnkeyedEncodingContainer {
        let box: ArrayBox
        let scalars: Scalars
        var codingPath: [any CodingKey] { [] }
        var count: Int { box.items.count }

        mutating func encodeNil() throws { box.items.append(scalars.text("null")) }
        mutating func encode(_ value: Bool) throws { box.items.append(scalars.text(value ? "true" : "false")) }
        mutating func encode(_ value: String) throws { box.items.append(scalars.quoted(value)) }
        mutating func encode(_ value: Double) throws { box.items.append(try scalars.number(value)) }
        mutating func encode(_ value: Float) throws { box.items.append(try scalars.number(value)) }
        mutating func encode(_ value: Int) throws { box.items.append(scalars.integer(value)) }
        mutating func encode(_ value: Int8) throws { box.items.append(scalars.integer(value)) }
        mutating func encode(_ value: Int16) throws { box.items.append(scalars.integer(value)) }
        mutating func encode(_ value: Int32) throws { box.items.append(scalars.integer(value)) }
        mutating func encode(_ value: Int64) throws { box.items.append(scalars.integer(value)) }
        mutating func encode(_ value: UInt) throws { box.items.append(scalars.integer(value)) }
        mutating func encode(_ value: UInt8) throws { box.items.append(scalars.integer(value)) }
        mutating func encode(_ value: UInt16) throws { box.items.append(scalars.integer(value)) }
        mutating func encode(_ value: UInt32) throws { box.items.append(scalars.integer(value)) }
        mutating func encode(_ value: UInt64) throws { box.items.append(scalars.integer(value)) }
        mutating func encode<T: Encodable>(_ value: T) throws { box.items.append(try scalars.nested(value)) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let nested = ObjectBox()
            box.items.append(.object(nested))
            return KeyedEncodingContainer(KeyedWriter<NestedKey>(box: nested, scalars: scalars))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let nested = ArrayBox()
            box.items.append(.array(nested))
            return UnkeyedWriter(box: nested, scalars: scalars)
        }

        mutating func superEncoder() -> any Encoder {
            let encoder = TreeEncoder(scalars: scalars)
            box.items.append(.later(encoder))
            return encoder
        }
    }

    fileprivate struct SingleValueWriter: SingleValueEncodingContainer {
        let encoder: TreeEncoder
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil() throws { encoder.node = encoder.scalars.text("null") }
        mutating func encode(_ value: Bool) throws { encoder.node = encoder.scalars.text(value ? "true" : "false") }
        mutating func encode(_ value: String) throws { encoder.node = encoder.scalars.quoted(value) }
        mutating func encode(_ value: Double) throws { encoder.node = try encoder.scalars.number(value) }
        mutating func encode(_ value: Float) throws { encoder.node = try encoder.scalars.number(value) }
        mutating func encode(_ value: Int) throws { encoder.node = encoder.scalars.integer(value) }
        mutating func encode(_ value: Int8) throws { encoder.node = encoder.scalars.integer(value) }
        mutating func encode(_ value: Int16) throws { encoder.node = encoder.scalars.integer(value) }
        mutating func encode(_ value: Int32) throws { encoder.node = encoder.scalars.integer(value) }
        mutating func encode(_ value: Int64) throws { encoder.node = encoder.scalars.integer(value) }
        mutating func encode(_ value: UInt) throws { encoder.node = encoder.scalars.integer(value) }
        mutating func encode(_ value: UInt8) throws { encoder.node = encoder.scalars.integer(value) }
        mutating func encode(_ value: UInt16) throws { encoder.node = encoder.scalars.integer(value) }
        mutating func encode(_ value: UInt32) throws { encoder.node = encoder.scalars.integer(value) }
        mutating func encode(_ value: UInt64) throws { encoder.node = encoder.scalars.integer(value) }
        mutating func encode<T: Encodable>(_ value: T) throws { encoder.node = try encoder.scalars.nested(value) }
    }
}
