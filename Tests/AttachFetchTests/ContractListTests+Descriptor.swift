@testable import AttachFetch
@testable import AttachFetchService
import Foundation
import Testing

/// The descriptor's fields, as its `Codable` conformance writes them, against every other list
/// of them: openapi.json's schemas, the compact writer (`AttachmentDescriptor+CompactJSON.swift`),
/// docs/descriptor.md's table and DocC's.
extension ContractListTests {
    /// A descriptor with every field of every part set, so that every key is written.
    static func fullyPopulatedDescriptor() -> AttachmentDescriptor {
        let encryption = AttachmentDescriptor.Encryption(scheme: "aes128gcm", key: "k", recordSize: 4096)
        let reason = AttachmentDescriptor.Reason(code: .ioError, message: "m")
        var d = AttachmentDescriptor(identifier: "a", url: "https://a.test/a.webp", status: .ready, reason: reason,
                                     timings: .init(total: 9, connect: 1, firstByte: 2, download: 3, thumbnail: 4, normalize: 5,
                                                    probe: 6, variants: 7))
        d.timings.queued = 8
        (d.finalUrl, d.file, d.mimeType, d.declaredMimeType) = ("https://a.test/b.webp", "/t/a.jpg", "image/jpeg", "image/webp")
        (d.kind, d.uti, d.fileExtension, d.bytes, d.sha256) = (.image, "public.jpeg", "jpg", 10, "00")
        (d.width, d.height) = (4, 3)
        var thumbnail = AttachmentDescriptor.Thumbnail(file: "/t/a.thumb.jpg", width: 4, height: 3, time: 0.5, publishedUrl: "https://c.test/t")
        (thumbnail.publishedBytes, thumbnail.encryption) = (11, encryption)
        d.thumbnail = thumbnail
        (d.role, d.payloadPath) = (.attachment, "aps.media")
        d.options = AttachmentOptions(clippingRect: .init(x: 0, y: 0, width: 1, height: 1), thumbnailTime: 1, thumbnailHidden: false)
        (d.sourceMimeType, d.sourceBytes, d.sourceWidth, d.sourceHeight) = ("image/webp", 20, 8, 6)
        (d.transforms, d.duration, d.videoCodec, d.audioCodec) = ([.transcoded], 1.5, "h264", "aac")
        (d.sourceAudioCodec, d.sourceVideoCodec) = ("Opus", "VP9")
        d.ats = ATSVerdict(problems: [.init(code: ATSVerdict.insecureScheme, message: "m")])
        (d.cache, d.publishedUrl, d.publishedBytes, d.encryption) = (.miss, "https://c.test/a", 12, encryption)
        var variant = AttachmentDescriptor.Variant(status: .failed, reason: reason)
        (variant.file, variant.bytes, variant.sha256, variant.mimeType) = ("/t/a.android.jpg", 9, "01", "image/jpeg")
        (variant.width, variant.height, variant.transforms, variant.publishedUrl) = (2, 1, [.downscaled], "https://c.test/v")
        (variant.publishedBytes, variant.encryption) = (13, encryption)
        d.variants = ["android": variant]
        d.skippedAtDeadline = ["probe"]
        d.thumbnailClip = try! ClippingRectangle(x: 0.25, y: 0, width: 0.5, height: 1)
        d.sourceDamage = "1 FLAC audio packet did not decode (Invalid data found when processing input)"
        return d
    }

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
        let unset = Self.unsetProperties(Self.fullyPopulatedDescriptor())
        #expect(unset.isEmpty, "set these in ContractListTests.fullyPopulatedDescriptor(): \(unset)")
    }

    /// JSONEncoder's keys (the `Codable` fields) are openapi.json's schema properties, at every level.
    @Test func theDocumentsSchemasAreTheCodableFields() throws {
        let written = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.fullyPopulatedDescriptor()))
        let problems = Self.schemaDifferences(written, ["$ref": "#/components/schemas/AttachmentDescriptor"], at: "$")
        #expect(problems.isEmpty, "written by Codable (expected) against the schema (found): \(problems.joined(separator: "\n"))")
    }

    /// The compact writer writes every key JSONEncoder writes, at every level, and no other.
    @Test func theCompactWriterWritesTheCodableFields() throws {
        let descriptor = Self.fullyPopulatedDescriptor()
        let encoded = Self.keyPaths(try JSONSerialization.jsonObject(with: JSONEncoder().encode(descriptor)))
        var json = CompactJSON()
        descriptor.write(to: &json)
        let compact = Self.keyPaths(try JSONSerialization.jsonObject(with: Data(json.bytes)))
        #expect(encoded == compact, "\(Self.difference("AttachmentDescriptor+CompactJSON.swift against Codable", expected: encoded, found: compact) ?? "")")
    }

    /// docs/descriptor.md's and DocC's field tables name each top-level field; the docs' rows of
    /// the parts name each of their fields.
    @Test func theFieldTablesAreTheCodableFields() throws {
        let written = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.fullyPopulatedDescriptor())) as? [String: Any])
        var problems: [String] = []
        let table = try JSONWriterTests.descriptorFieldTable()
        problems += [Self.difference("docs/descriptor.md, ## Fields", expected: written.keys, found: table.keys)].compactMap { $0 }
        for (row, key) in [("timings", "timings"), ("thumbnail", "thumbnail"), ("variants", "variants")] {
            let object = (written[key] as? [String: Any]).map { key == "variants" ? $0.values.first as? [String: Any] ?? [:] : $0 } ?? [:]
            let unnamed = Set(object.keys).subtracting(JSONWriterTests.namesIn(table[row] ?? ""))
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
