import AttachFetchCore

/// openapi.json's schemas of the descriptor, written from its `Codable` definition: what
/// `AttachmentDescriptor.specimen` (every field set) writes when encoded. For each object, its
/// properties in the order they are encoded, each one's JSON type, `items` and
/// `additionalProperties`, the values of a `ContractEnumeration` (status, kind, transforms,
/// reason codes, ...) as `enum`, and `required`: the fields encoded always (`encode`, not
/// `encodeIfPresent`). A property that names another schema (`$ref`) is followed and that
/// schema written. Kept from the document: each property's prose and any keyword not written
/// here (a `minimum`, the encryption scheme's one value).
func writeDescriptorSchemas(into document: inout OrderedJSON) throws {
    guard var components = document["components"], let schemas = components["schemas"], let descriptor = schemas["AttachmentDescriptor"] else {
        throw DocumentError("openapi.json: no components.schemas.AttachmentDescriptor")
    }
    var writer = SchemaWriter(schemas: schemas)
    writer.schemas["AttachmentDescriptor"] = try writer.write(try Shape.of(AttachmentDescriptor.specimen), into: descriptor, at: "$")
    components["schemas"] = writer.schemas
    document["components"] = components
}

private struct SchemaWriter {
    var schemas: OrderedJSON

    /// `schema` with what `shape` says written into it.
    mutating func write(_ shape: Shape, into schema: OrderedJSON, at path: String) throws -> OrderedJSON {
        if let reference = schema["$ref"]?.stringValue {
            let name = String(reference.split(separator: "/").last ?? "")
            guard reference.hasPrefix("#/components/schemas/"), let named = schemas[name] else {
                throw DocumentError("openapi.json at \(path): \(reference) names no schema")
            }
            schemas[name] = try write(shape, into: named, at: path)
            return schema
        }
        var schema = schema
        switch shape {
        case .scalar(let type):
            schema["type"] = .string(type)
        case .enumerated(let values):
            schema["type"] = .string("string")
            schema["enum"] = .array(values.map(OrderedJSON.string))
        case .array(let items):
            schema["type"] = .string("array")
            schema["items"] = try write(items, into: schema["items"] ?? .object([]), at: path + "[]")
        case .map(let values):
            schema["type"] = .string("object")
            let existing = schema["additionalProperties"].flatMap { if case .object = $0 { $0 } else { nil } }
            schema["additionalProperties"] = try write(values, into: existing ?? .object([]), at: path + "{}")
        case .object(let fields):
            schema["type"] = .string("object")
            let documented = schema["properties"]
            schema["properties"] = .object(try fields.map { field in
                .init(key: field.key, value: try write(field.shape, into: documented?[field.key] ?? .object([]), at: "\(path).\(field.key)"))
            })
            let required = fields.filter(\.required).map { OrderedJSON.string($0.key) }
            schema["required"] = required.isEmpty ? nil : .array(required)
        }
        return schema
    }
}
