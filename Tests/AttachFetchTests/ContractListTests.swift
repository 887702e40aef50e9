@testable import AttachFetch
@testable import AttachFetchTransfer
@testable import AttachFetchService
import Foundation
import Testing

/// Reason codes, routes and descriptor fields are each defined once in Swift (`ReasonCode`, the
/// `Routes` table, the descriptor's `Codable` fields). Every other list of them, in the sources
/// and in the docs, is compared with that definition here, and a difference is named: what is
/// missing or extra, and in which file (docs/architecture.md#contract-lists).
@Suite struct ContractListTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// nil when `found` is `expected`; otherwise what `place` lacks and what it has besides.
    static func difference(_ place: String, expected: some Sequence<String>, found: some Sequence<String>) -> String? {
        let (expected, found) = (Set(expected), Set(found))
        guard expected != found else { return nil }
        var parts: [String] = []
        if !expected.subtracting(found).isEmpty { parts.append("missing \(expected.subtracting(found).sorted())") }
        if !found.subtracting(expected).isEmpty { parts.append("extra \(found.subtracting(expected).sorted())") }
        return "\(place): " + parts.joined(separator: "; ")
    }

    /// The rows of the markdown table under `heading`: the first column's backticked name (the
    /// last path component of a DocC ``Type/name`` link) and the second column.
    static func tableRows(_ text: String, under heading: String) -> [(name: String, second: String)] {
        guard let start = text.range(of: heading + "\n") else { return [] }
        let rest = text[start.upperBound...]
        let end = rest.range(of: "\n#")?.lowerBound ?? rest.endIndex
        var rows: [(name: String, second: String)] = []
        for line in rest[..<end].split(separator: "\n") where line.hasPrefix("| `") {
            let columns = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard columns.count >= 2 else { continue }
            for name in columns[0].split(separator: "`") where !name.isEmpty && name != ", " {
                rows.append((String(name.split(separator: "/").last ?? name), columns[1]))
            }
        }
        return rows
    }

    // MARK: Reason codes

    /// `allKnown` repeats the declarations above it (a struct's static members cannot be listed
    /// in Swift): each declared code is in it, once, in declaration order, named as its raw value.
    @Test func everyDeclaredReasonCodeIsInAllKnown() throws {
        let source = try Self.text("Sources/AttachFetchCore/Descriptor/ReasonCode.swift")
        let declaration = /public static let (\w+) = ReasonCode\(rawValue: "(\w+)"\)/
        let declared = source.matches(of: declaration).map { (name: String($0.1), raw: String($0.2)) }
        for code in declared where code.name != code.raw { Issue.record("ReasonCode.\(code.name) has the raw value \(code.raw)") }
        #expect(declared.map(\.raw) == ReasonCode.allKnown.map(\.rawValue),
                "\(Self.difference("ReasonCode.allKnown", expected: declared.map(\.raw), found: ReasonCode.allKnown.map(\.rawValue)) ?? "the order differs")")
    }

    /// Each list of reason codes names every code and no other; the tables give each its status.
    @Test func everyListOfReasonCodesIsAllKnown() throws {
        let known = ReasonCode.allKnown.map(\.rawValue)
        var problems: [String] = []
        let schemas = (OpenAPIContract.document["components"] as? [String: Any])?["schemas"] as? [String: Any]
        let reason = (schemas?["Reason"] as? [String: Any])?["properties"] as? [String: Any]
        let documented = (reason?["code"] as? [String: Any])?["enum"] as? [String] ?? []
        problems += [Self.difference("openapi.json, Reason.code's enum", expected: known, found: documented)].compactMap { $0 }
        for (file, heading) in [("docs/descriptor.md", "## Reason codes"),
                                ("Sources/AttachFetch/AttachFetch.docc/DescriptorContract.md", "### Reason codes")] {
            let rows = Self.tableRows(try Self.text(file), under: heading)
            problems += [Self.difference("\(file), its table of reason codes", expected: known, found: rows.map(\.name))].compactMap { $0 }
            for row in rows where ReasonCode.allKnown.contains(ReasonCode(rawValue: row.name)) {
                let status = ReasonCode(rawValue: row.name).status.rawValue
                if row.second != status { problems.append("\(file): \(row.name) is \(status), not \(row.second)") }
            }
        }
        let script = try Self.text("Sources/AttachFetchService/Inspector/inspector-verdict.js")
        let sentences = script.matches(of: /case '(\w+)':/).map { String($0.1) }
        problems += [Self.difference("inspector-verdict.js, reasonSentence's cases", expected: known, found: sentences)].compactMap { $0 }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    /// The cache and the circuit breaker decide on every code: each is in exactly one of their
    /// two lists, and the breaker describes exactly the codes it counts.
    @Test func theCacheAndTheBreakerDecideOnEveryCode() throws {
        let known = ReasonCode.allKnown.map(\.rawValue)
        for (place, yes, no) in [("ResultCaching.cachedFailures / uncachedFailures", ResultCaching.cachedFailures, ResultCaching.uncachedFailures),
                                 ("OriginFailure.counted / neverCounted", OriginFailure.counted, OriginFailure.neverCounted)] {
            #expect(yes.isDisjoint(with: no), "\(place): in both: \(yes.intersection(no).map(\.rawValue).sorted())")
            let both = yes.union(no).map(\.rawValue)
            #expect(Set(both) == Set(known), "\(Self.difference(place, expected: known, found: both) ?? "")")
        }
        let described = ReasonCode.allKnown.filter { OriginFailure.describe(Reason(code: $0, message: "m"), status: 503) != nil }
        #expect(Set(described) == OriginFailure.counted, "OriginFailure.describe: \(Self.difference("its cases", expected: OriginFailure.counted.map(\.rawValue), found: described.map(\.rawValue)) ?? "")")
        // docs/caching-and-fan-out.md names every code that is never reused.
        let page = try Self.text("docs/caching-and-fan-out.md")
        let paragraph = page.range(of: "**Failures.**").map { String(page[$0.lowerBound...]).components(separatedBy: "\n\n")[0] } ?? ""
        let unnamed = ResultCaching.uncachedFailures.map(\.rawValue).filter { !paragraph.contains("`\($0)`") }
        #expect(unnamed.isEmpty, "docs/caching-and-fan-out.md, **Failures.**: never reused, not named: \(unnamed.sorted())")
    }

    // MARK: Routes

    /// The `Routes` table is what the router registers and what openapi.json documents, route by
    /// route and method by method; each route's metrics label is derived from its pattern.
    @Test func theRouteTableIsTheRouterAndTheDocument() throws {
        let table = Set(Routes.all.flatMap { route in route.methods.map { "\($0.rawValue) \(route.pattern)" } })
        let scratch = Scratch()
        var pipeline = AttachFetchConfiguration()
        pipeline.temporaryDirectory = scratch.path
        let server = try AttachFetchServer(configuration: ServiceConfiguration(pipeline: pipeline), logger: AttachmentPipeline.silentLogger)
        let registered = server.makeRouter().routes.map { "\($0.method.rawValue) \($0.path.description.hasPrefix("/") ? "" : "/")\($0.path)" }
        withExtendedLifetime(scratch) {}
        let documented = OpenAPIContract.paths.flatMap { path, operations in
            operations.keys.filter { ["get", "head", "post", "put", "delete", "patch"].contains($0) }.map { "\($0.uppercased()) \(path)" }
        }
        let problems = [Self.difference("the router's registered routes", expected: table, found: registered),
                        Self.difference("openapi.json's paths", expected: table, found: documented)].compactMap { $0 }
        #expect(problems.isEmpty, "against the Routes table: \(problems.joined(separator: "\n"))")
        #expect(Set(Routes.all.map(\.pattern)).count == Routes.all.count, "a pattern is in the Routes table twice")
    }
}
