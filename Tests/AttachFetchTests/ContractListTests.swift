@testable import AttachFetch
@testable import AttachFetchTransfer
@testable import AttachFetchService
import Foundation
import Testing

/// Reason codes, routes and descriptor fields are each defined once in Swift
/// (`ReasonCode.contracts`, the `Routes` table, the descriptor's `Codable` fields). What is not
/// generated from that definition is compared with it here, and a difference is named: what is
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

    /// The docs' tables are generated (`contract-lists`, checked by `ReasonCodeContractTests`),
    /// openapi.json's enum too (`openapi-document`, below); the inspector's sentences are
    /// written by hand, one per code.
    @Test func theInspectorHasASentenceForEveryCode() throws {
        let script = try Self.text("Sources/AttachFetchService/Inspector/inspector-verdict.js")
        let sentences = script.matches(of: /case '(\w+)':/).map { String($0.1) }
        let problem = Self.difference("inspector-verdict.js, reasonSentence's cases", expected: ReasonCode.allKnown.map(\.rawValue), found: sentences)
        #expect(problem == nil, "\(problem ?? "")")
    }

    /// The breaker describes exactly the codes its contract counts, and the caching page names
    /// every code that is never reused.
    @Test func theBreakerAndTheCachingPageFollowTheContracts() throws {
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

    /// openapi.json's paths are written from the table (`openapi-document`): the committed
    /// document is what it writes; a path taken out by hand is found and written back; a
    /// documented route whose methods differ from the table's is named, not papered over.
    @Test func theDocumentsPathsAreWrittenFromTheRouteTable() throws {
        #expect(try Self.openAPIDocument(["--check"], in: Self.root.path).status == 0)
        let (scratch, committed, document) = try Self.documentCopy()
        let script = try #require(committed.range(of: #"\n    "/inspector-verdict\.js": \{\n(.*\n)*?    \},"#, options: .regularExpression))
        try (String(committed[..<script.lowerBound]) + String(committed[script.upperBound...])).write(to: document, atomically: true, encoding: .utf8)
        try Self.expectWrittenBack(scratch, document, committed)
        // /healthz documented without its HEAD: an error that names the route.
        let head = try #require(committed.range(of: #""healthHead""#))
        let opening = try #require(committed.range(of: #""head": {"#, options: .backwards, range: committed.startIndex..<head.lowerBound))
        try committed.replacingCharacters(in: opening, with: #""options": {"#).write(to: document, atomically: true, encoding: .utf8)
        let methods = try Self.openAPIDocument(["--check"], in: scratch.path)
        #expect(methods.status == 2 && methods.output.contains("/healthz with [\"get\", \"options\"]"), "\(methods.output)")
    }

    /// openapi.json's descriptor schemas are written from the `Codable` definition
    /// (`openapi-document`): a property taken out, two types changed (one property's prose
    /// kept), a reason code dropped from the enum and a field made required by hand are found
    /// and written back.
    @Test func theDocumentsDescriptorSchemasAreWrittenFromTheCodableDefinition() throws {
        let (scratch, committed, document) = try Self.documentCopy()
        var edited = committed
        // sourceDamage's property taken out.
        let property = try #require(edited.range(of: "\n          \"sourceDamage\": {\n            \"type\": \"string\"\n          },"))
        edited.removeSubrange(property)
        // sourceAudioCodec documented as a number: its type is written, its prose kept.
        let codec = try #require(edited.range(of: "\"sourceAudioCodec\": {\n            \"type\": \"string\""))
        edited.replaceSubrange(codec, with: "\"sourceAudioCodec\": {\n            \"type\": \"number\"")
        // Timings.total documented as a string.
        let timings = try #require(edited.range(of: #""Timings": {"#))
        let total = try #require(edited.range(of: #""total": \{\n            "type": "integer""#, options: .regularExpression, range: timings.upperBound..<edited.endIndex))
        edited.replaceSubrange(total, with: "\"total\": {\n            \"type\": \"string\"")
        // A reason code missing from Reason.code's enum.
        let code = try #require(edited.range(of: "\n              \"corruptMedia\","))
        edited.removeSubrange(code)
        // Thumbnail.file (left out when no files are kept) made required.
        let thumbnail = try #require(edited.range(of: #""Thumbnail": {"#))
        let required = try #require(edited.range(of: "\"required\": [\n          \"width\"", range: thumbnail.upperBound..<edited.endIndex))
        edited.replaceSubrange(required, with: "\"required\": [\n          \"file\",\n          \"width\"")
        #expect(edited != committed)
        try edited.write(to: document, atomically: true, encoding: .utf8)
        try Self.expectWrittenBack(scratch, document, committed)
    }

    /// A scratch package root for openapi.json, the committed text and the copy's URL.
    static func documentCopy() throws -> (scratch: Scratch, committed: String, document: URL) {
        let scratch = Scratch()
        let document = URL(fileURLWithPath: scratch.path + "/Sources/AttachFetchService/OpenAPI/openapi.json")
        try FileManager.default.createDirectory(at: document.deletingLastPathComponent(), withIntermediateDirectories: true)
        let committed = try Self.text("Sources/AttachFetchService/OpenAPI/openapi.json")
        return (scratch, committed, document)
    }

    /// The edited copy at `document` fails the check, and the tool writes it back to `committed`.
    static func expectWrittenBack(_ scratch: Scratch, _ document: URL, _ committed: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) throws {
        let root = scratch.path
        let checked = try Self.openAPIDocument(["--check"], in: root)
        #expect(checked.status == 1 && checked.output.contains("differs from the Routes table or the descriptor's Codable definition"),
                "\(checked.output)", sourceLocation: sourceLocation)
        #expect(try Self.openAPIDocument([], in: root).status == 0, sourceLocation: sourceLocation)
        #expect(try String(contentsOf: document, encoding: .utf8) == committed, "written back byte for byte", sourceLocation: sourceLocation)
    }

    /// Runs `openapi-document` in `directory`: its status and what it wrote on either stream.
    static func openAPIDocument(_ arguments: [String], in directory: String) throws -> (status: Int32, output: String) {
        try runBuiltProgram("openapi-document", arguments, in: directory)
    }
}
