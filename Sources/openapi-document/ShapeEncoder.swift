import AttachFetchCore

/// What a `Codable` value writes, read by encoding it: each key's JSON type, whether it is
/// always written (`encode`) or only when present (`encodeIfPresent`), an array's items, a
/// string-keyed dictionary's values, and the values of a `ContractEnumeration`. Encode a value
/// with every optional set: a nil is never written, so it has no shape to read.
indirect enum Shape {
    case scalar(String)
    case enumerated([String])
    case object([Field])
    case array(Shape)
    case map(Shape)

    struct Field {
        var key: String
        var shape: Shape
        var required: Bool
    }

    static func of(_ value: some Encodable) throws -> Shape {
        let node = ShapeNode()
        try node.describe(value)
        return try node.shape(at: "$")
    }
}

/// One value being encoded; its kind is set by the first container asked of it.
private final class ShapeNode {
    enum Kind { case unknown, scalar(String), enumerated([String]), object, array, map }
    var kind = Kind.unknown
    var fields: [(key: String, node: ShapeNode, required: Bool)] = []
    var element: ShapeNode?

    func describe<T: Encodable>(_ value: T) throws {
        if let enumeration = T.self as? any ContractEnumeration.Type {
            kind = .enumerated(enumeration.contractValues)
        } else if let dictionary = value as? [String: any Encodable] {
            kind = .map
            let element = ShapeNode()
            self.element = element
            if let first = dictionary.values.first { try element.describe(first) }
        } else {
            try value.encode(to: ShapeEncoder(node: self))
        }
    }

    func field(_ key: String, required: Bool) -> ShapeNode {
        let node = ShapeNode()
        fields.append((key, node, required))
        return node
    }

    func shape(at path: String) throws -> Shape {
        switch kind {
        case .unknown: throw DocumentError("\(path): nothing was written; set it in AttachmentDescriptor.specimen")
        case .scalar(let type): return .scalar(type)
        case .enumerated(let values): return .enumerated(values)
        case .object:
            return .object(try fields.map { .init(key: $0.key, shape: try $0.node.shape(at: "\(path).\($0.key)"), required: $0.required) })
        case .array:
            guard let element else { throw DocumentError("\(path): an empty array; give it an item in AttachmentDescriptor.specimen") }
            return .array(try element.shape(at: path + "[]"))
        case .map:
            return .map(try (element ?? ShapeNode()).shape(at: path + "{}"))
        }
    }
}

private struct ShapeEncoder: Encoder {
    let node: ShapeNode
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.kind = .object
        return KeyedEncodingContainer(Fields(node: node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.kind = .array
        return Items(node: node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node) }
}

/// The JSON type of a Swift scalar the encoders write.
private func jsonType(_ type: Any.Type) -> String {
    switch type {
    case is Bool.Type: return "boolean"
    case is String.Type: return "string"
    case is Double.Type, is Float.Type: return "number"
    default: return "integer"
    }
}

private struct Fields<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: ShapeNode
    var codingPath: [any CodingKey] { [] }

    private func scalar<T>(_ type: T.Type, _ key: Key, required: Bool) {
        node.field(key.stringValue, required: required).kind = .scalar(jsonType(type))
    }

    mutating func encodeNil(forKey key: Key) throws {}
    mutating func encode(_ value: Bool, forKey key: Key) throws { scalar(Bool.self, key, required: true) }
    mutating func encode(_ value: String, forKey key: Key) throws { scalar(String.self, key, required: true) }
    mutating func encode(_ value: Double, forKey key: Key) throws { scalar(Double.self, key, required: true) }
    mutating func encode(_ value: Float, forKey key: Key) throws { scalar(Float.self, key, required: true) }
    mutating func encode(_ value: Int, forKey key: Key) throws { scalar(Int.self, key, required: true) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { scalar(Int8.self, key, required: true) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { scalar(Int16.self, key, required: true) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { scalar(Int32.self, key, required: true) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { scalar(Int64.self, key, required: true) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { scalar(UInt.self, key, required: true) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { scalar(UInt8.self, key, required: true) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { scalar(UInt16.self, key, required: true) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { scalar(UInt32.self, key, required: true) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { scalar(UInt64.self, key, required: true) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try node.field(key.stringValue, required: true).describe(value)
    }

    // Optional fields: the same, but not required. Every overload, because the protocol's
    // default for each would call `encode` above and mark the field required.
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { if value != nil { scalar(Bool.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { if value != nil { scalar(String.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { if value != nil { scalar(Double.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { if value != nil { scalar(Float.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { if value != nil { scalar(Int.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { if value != nil { scalar(Int8.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { if value != nil { scalar(Int16.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { if value != nil { scalar(Int32.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { if value != nil { scalar(Int64.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { if value != nil { scalar(UInt.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { if value != nil { scalar(UInt8.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { if value != nil { scalar(UInt16.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { if value != nil { scalar(UInt32.self, key, required: false) } }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { if value != nil { scalar(UInt64.self, key, required: false) } }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try node.field(key.stringValue, required: false).describe(value) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let field = node.field(key.stringValue, required: true)
        field.kind = .object
        return KeyedEncodingContainer(Fields<NestedKey>(node: field))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let field = node.field(key.stringValue, required: true)
        field.kind = .array
        return Items(node: field)
    }

    mutating func superEncoder() -> any Encoder { ShapeEncoder(node: node.field("super", required: true)) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { ShapeEncoder(node: node.field(key.stringValue, required: true)) }
}

/// An array's items: the shape of its first item.
private struct Items: UnkeyedEncodingContainer {
    let node: ShapeNode
    var codingPath: [any CodingKey] { [] }
    var count: Int { node.element == nil ? 0 : 1 }

    private func item() -> ShapeNode? {
        guard node.element == nil else { return nil }
        let element = ShapeNode()
        node.element = element
        return element
    }

    mutating func encodeNil() throws {}
    mutating func encode(_ value: Bool) throws { item()?.kind = .scalar(jsonType(Bool.self)) }
    mutating func encode(_ value: String) throws { item()?.kind = .scalar(jsonType(String.self)) }
    mutating func encode(_ value: Double) throws { item()?.kind = .scalar(jsonType(Double.self)) }
    mutating func encode(_ value: Float) throws { item()?.kind = .scalar(jsonType(Float.self)) }
    mutating func encode(_ value: Int) throws { item()?.kind = .scalar(jsonType(Int.self)) }
    mutating func encode(_ value: Int8) throws { item()?.kind = .scalar(jsonType(Int8.self)) }
    mutating func encode(_ value: Int16) throws { item()?.kind = .scalar(jsonType(Int16.self)) }
    mutating func encode(_ value: Int32) throws { item()?.kind = .scalar(jsonType(Int32.self)) }
    mutating func encode(_ value: Int64) throws { item()?.kind = .scalar(jsonType(Int64.self)) }
    mutating func encode(_ value: UInt) throws { item()?.kind = .scalar(jsonType(UInt.self)) }
    mutating func encode(_ value: UInt8) throws { item()?.kind = .scalar(jsonType(UInt8.self)) }
    mutating func encode(_ value: UInt16) throws { item()?.kind = .scalar(jsonType(UInt16.self)) }
    mutating func encode(_ value: UInt32) throws { item()?.kind = .scalar(jsonType(UInt32.self)) }
    mutating func encode(_ value: UInt64) throws { item()?.kind = .scalar(jsonType(UInt64.self)) }
    mutating func encode<T: Encodable>(_ value: T) throws { try item()?.describe(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let element = item() ?? ShapeNode()
        element.kind = .object
        return KeyedEncodingContainer(Fields<NestedKey>(node: element))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let element = item() ?? ShapeNode()
        element.kind = .array
        return Items(node: element)
    }

    mutating func superEncoder() -> any Encoder { ShapeEncoder(node: item() ?? ShapeNode()) }
}

private struct Single: SingleValueEncodingContainer {
    let node: ShapeNode
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil() throws {}
    mutating func encode(_ value: Bool) throws { node.kind = .scalar(jsonType(Bool.self)) }
    mutating func encode(_ value: String) throws { node.kind = .scalar(jsonType(String.self)) }
    mutating func encode(_ value: Double) throws { node.kind = .scalar(jsonType(Double.self)) }
    mutating func encode(_ value: Float) throws { node.kind = .scalar(jsonType(Float.self)) }
    mutating func encode(_ value: Int) throws { node.kind = .scalar(jsonType(Int.self)) }
    mutating func encode(_ value: Int8) throws { node.kind = .scalar(jsonType(Int8.self)) }
    mutating func encode(_ value: Int16) throws { node.kind = .scalar(jsonType(Int16.self)) }
    mutating func encode(_ value: Int32) throws { node.kind = .scalar(jsonType(Int32.self)) }
    mutating func encode(_ value: Int64) throws { node.kind = .scalar(jsonType(Int64.self)) }
    mutating func encode(_ value: UInt) throws { node.kind = .scalar(jsonType(UInt.self)) }
    mutating func encode(_ value: UInt8) throws { node.kind = .scalar(jsonType(UInt8.self)) }
    mutating func encode(_ value: UInt16) throws { node.kind = .scalar(jsonType(UInt16.self)) }
    mutating func encode(_ value: UInt32) throws { node.kind = .scalar(jsonType(UInt32.self)) }
    mutating func encode(_ value: UInt64) throws { node.kind = .scalar(jsonType(UInt64.self)) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.describe(value) }
}
