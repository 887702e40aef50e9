@testable import AttachFetch
@testable import AttachFetchService
import Foundation
import Testing

/// The descriptor's fields, as its `Codable` conformance writes them, against every other list
/// of them: openapi.json's schemas, the compact writer (`AttachmentDescriptor+CompactJSON.swift`),
/// docs/descriptor.md's table and DocC's.
extension ContractListTests {
    /// The stored properties left nil anywhere in `value`, by path.
    static func unsetProperties(_ value: Any, at path: String = "$") -> [String] {
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .optional:
            guard let wrapped = mirror.children.first?.value else { return [path] }
            return unsetProperties(wrapped, at: path)
        case .struct:
            return mirror.children.flatMap { unsetProperties($0.value, at: "\(path).\($0.label ?? "?")") }
        case .dictionary, .collection:
            return mirror.children.flatMap { unsetProperties($0.value, at: path + "[]") }
        case .tuple:
            return mirror.children.flatMap { unsetProperties($0.value, at: path) }
        default:
            return []
        }
    }

    /// Every key path in a JSON value: `$.thumbnail.encryption.key`; an array's items as `[]`.
    static func keyPaths(_ json: Any, at path: String = "$") -> Set<String> {
        if let object = json as? [String: Any] {
            return object.reduce(into: Set<String>()) { paths, member in
                paths.insert("\(path).\(member.key)")
                paths.formUnion(keyPaths(member.value, at: "\(path).\(member.key)"))
            }
        }
        if let array = json as? [Any] { return array.reduce(into: Set<String>()) { $0.formUnion(keyPaths($1, at: path + "[]")) } }
        return []
    }

    /// Where the keys of `json` and the properties of `schema` differ, walking both.
    static func schemaDifferences(_ json: Any, _ schema: [String: Any], at path: String) -> [String] {
        var schema = schema
        if let reference = schema["$ref"] as? String {
            let schemas = (OpenAPIContract.document["components"] as? [String: Any])?["schemas"] as? [String: Any]
            schema = schemas?[String(reference.split(separator: "/").last ?? "")] as? [String: Any] ?? [:]
        }
        if let object = json as? [String: Any] {
            if let properties = schema["properties"] as? [String: Any] {
                let found = difference("openapi.json at \(path)", expected: object.keys, found: properties.keys)
                return [found].compactMap { $0 } + object.flatMap { key, value in
                    (properties[key] as? [String: Any]).map { schemaDifferences(value, $0, at: "\(path).\(key)") } ?? []
                }
            }
            if let additional = schema["additionalProperties"] as? [String: Any] {
                return object.flatMap { schemaDifferences($0.value, additional, at: "\(path).\($0.key)") }
            }
            return ["openapi.json at \(path): an object without properties"]
        }
        if let array = json as? [Any], let items = schema["items"] as? [String: Any] {
            return array.flatMap { schemaDifferences($0, items, at: path + "[]") }
        }
        return []
    }

    @Test func theFullyPopulatedDescriptorSetsEveryField() {
        let unset = Self.unsetProperties(AttachmentDescriptor.specimen)
        #expect(unset.isEmpty, "set these in AttachmentDescriptor.specimen (AttachmentDescriptor+Specimen.swift): \(unset)")
    }

    /// JSONEncoder's keys (the `Codable` fields) are openapi.json's schema properties, at every level.
    @Test func theDocumentsSchemasAreTheCodableFields() throws {
        let written = try JSONSerialization.jsonObject(with: JSONEncoder().encode(AttachmentDescriptor.specimen))
        let problems = Self.schemaDifferences(written, ["$ref": "#/components/schemas/AttachmentDescriptor"], at: "$")
        #expect(problems.isEmpty, "written by Codable (expected) against the schema (found): \(problems.joined(separator: "\n"))")
    }

    /// The compact writer writes every key JSONEncoder writes, at every level, and no other.
    @Test func theCompactWriterWritesTheCodableFields() throws {
        let descriptor = AttachmentDescriptor.specimen
        let encoded = Self.keyPaths(try JSONSerialization.jsonObject(with: JSONEncoder().encode(descriptor)))
        var json = CompactJSON()
        descriptor.write(to: &json)
        let compact = Self.keyPaths(try JSONSerialization.jsonObject(with: Data(json.bytes)))
        #expect(encoded == compact, "\(Self.difference("AttachmentDescriptor+CompactJSON.swift against Codable", expected: encoded, found: compact) ?? "")")
    }

    /// docs/descriptor.md's and DocC's field tables name each top-level field; the docs' rows of
    /// the parts name each of their fields.
    @Test func theFieldTablesAreTheCodableFields() throws {
        let written = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(AttachmentDescriptor.specimen)) as? [String: Any])
        var problems: [String] = []
        let table = try DocumentedNames.descriptorFieldTable()
        problems += [Self.difference("docs/descriptor.md, ## Fields", expected: written.keys, found: table.keys)].compactMap { $0 }
        for (row, key) in [("timings", "timings"), ("thumbnail", "thumbnail"), ("variants", "variants")] {
            let object = (written[key] as? [String: Any]).map { key == "variants" ? $0.values.first as? [String: Any] ?? [:] : $0 } ?? [:]
            let unnamed = Set(object.keys).subtracting(DocumentedNames.namesIn(table[row] ?? ""))
            if !unnamed.isEmpty { problems.append("docs/descriptor.md, the `\(row)` row: missing \(unnamed.sorted())") }
        }
        let docc = "Sources/AttachFetch/AttachFetch.docc/DescriptorContract.md"
        let rows = Self.tableRows(try Self.text(docc), under: "### Fields")
        problems += [Self.difference("\(docc), ### Fields", expected: written.keys, found: rows.map(\.name))].compactMap { $0 }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
    /// The descriptor's enumerations (`CaseIterable` in Swift) are openapi.json's enums, and
    /// docs/descriptor.md's row for each field names every value.
    @Test func theDescriptorsEnumerationsAreOpenAPIsEnumsAndDocumented() throws {
        let schemas = try #require((OpenAPIContract.document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        func openAPIEnum(_ path: [String]) -> [String] {
            var node: Any? = schemas
            for key in path { node = (node as? [String: Any])?[key] }
            return (node as? [String: Any])?["enum"] as? [String] ?? []
        }
        let docs = try Self.text("docs/descriptor.md")
        /// The backticked words of the row whose first column is `field`.
        func documented(_ field: String) -> Set<String> {
            guard let line = docs.split(separator: "\n").first(where: { $0.hasPrefix("| `\(field)` |") }) else { return [] }
            return Set(line.matches(of: /`([A-Za-z]+)`/).map { String($0.1) })
        }
        let lists: [(name: String, values: [String], schema: [String], docField: String?)] = [
            ("status", AttachmentDescriptor.Status.allCases.map(\.rawValue), ["AttachmentDescriptor", "properties", "status"], "status"),
            ("kind", AttachmentDescriptor.Kind.allCases.map(\.rawValue), ["AttachmentDescriptor", "properties", "kind"], nil),
            ("transforms", AttachmentDescriptor.Transform.allCases.map(\.rawValue), ["Transform"], "transforms"),
            ("role", AttachmentDescriptor.Role.allCases.map(\.rawValue), ["AttachmentDescriptor", "properties", "role"], nil),
            ("request role", AttachmentDescriptor.Role.allCases.map(\.rawValue), ["AttachmentRequest", "properties", "role"], nil),
            ("cache", AttachmentDescriptor.CacheStatus.allCases.map(\.rawValue), ["AttachmentDescriptor", "properties", "cache"], "cache"),
            ("variant status", AttachmentDescriptor.Variant.Status.allCases.map(\.rawValue), ["Variant", "properties", "status"], nil),
            ("lint severity", PayloadLintFinding.Severity.allCases.map(\.rawValue), ["LintFinding", "properties", "severity"], nil),
        ]
        var problems: [String] = []
        for list in lists {
            problems += [Self.difference("openapi.json, \(list.schema.joined(separator: "."))'s enum (\(list.name))",
                                         expected: list.values, found: openAPIEnum(list.schema))].compactMap { $0 }
            if let field = list.docField {
                let missing = Set(list.values).subtracting(documented(field))
                if !missing.isEmpty { problems.append("docs/descriptor.md, the row of `\(field)`: missing \(missing.sorted())") }
            }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}
