@testable import AttachFetch
@testable import AttachFetchService
import Foundation
import Logging
import Testing
import ServiceTestHelpers
import TestHelpers

/// The OpenAPI document and the code cannot drift: each route, request field, response field
/// and code is in both or the test names it. (Every answer the service tests receive is also
/// checked against the document: `OpenAPIContract`.)
@Suite struct OpenAPIDocumentTests {
    private var schemas: [String: [String: Any]] {
        (OpenAPIContract.document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]] ?? [:]
    }

    private func properties(_ schema: String) -> Set<String> {
        Set((schemas[schema]?["properties"] as? [String: Any] ?? [:]).keys)
    }

    private func enumeration(_ schema: [String: Any]?) -> Set<String> { Set(schema?["enum"] as? [String] ?? []) }

    /// The keys of a JSON object, as the code writes them.
    private func keys(_ value: some Encodable) throws -> Set<String> {
        let object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any]
        return Set(object?.keys.map { $0 } ?? [])
    }

    @Test func theDocumentIsOpenAPI31AndServedWithoutAToken() async throws {
        #expect(OpenAPIContract.document["openapi"] as? String == "3.1.0")
        let scratch = Scratch()
        let service = try await RunningServer.start(scratch) { $0.tokens = ["secret-token"] }
        let answer = try await Exchange.send("GET", "\(service.base)/openapi.json")
        #expect(answer.status == 200 && answer.headers["content-type"] == "application/json")
        #expect(answer.body == FileManager.default.contents(atPath: OpenAPIContract.path))
        #expect(try await Exchange.send("POST", "\(service.base)/v1/attachments").status == 401, "the /v1 routes still need one")
        await service.stop()
    }

    /// The contract checker reads `maximum`, `maxItems` and lists of types as the document
    /// means them.
    @Test func theCheckerReportsAValueOverItsMaximumTooManyItemsAndATypeOutsideItsList() throws {
        func problems(_ json: String, _ schema: [String: Any]) -> [String] { OpenAPIContract.validateJSON(Data(json.utf8), against: schema) }
        let clipX: [String: Any] = ["type": "number", "minimum": 0, "maximum": 1]
        #expect(problems("1", clipX).isEmpty)
        #expect(problems("1.5", clipX) == ["$: over 1.0"])
        let urls = (0..<101).map { "\"https://example.com/\($0).jpg\"" }
        let byURLs: [String: Any] = ["$ref": "#/components/schemas/AttachmentsByURLs"]
        #expect(problems(#"{"urls": [\#(urls.prefix(100).joined(separator: ","))]}"#, byURLs).isEmpty)
        #expect(problems(#"{"urls": [\#(urls.joined(separator: ","))]}"#, byURLs) == ["$.urls: more than 100 items"])
        let nullable: [String: Any] = ["type": ["string", "null"]]
        #expect(problems(#""text""#, nullable).isEmpty && problems("null", nullable).isEmpty)
        #expect(problems("3", nullable) == ["$: 3.0 is none of string, null"])
    }

    // The descriptor's schemas against its Codable fields: `ContractListTests`.

    /// Every error code the service can answer with (each `code: "…"` in its sources) is in the
    /// document's enum. (Reason codes and routes: `ContractListTests`.)
    @Test func errorCodesAreTheCodes() throws {
        let sources = URL(fileURLWithPath: OpenAPIContract.path).deletingLastPathComponent().deletingLastPathComponent()
        var thrown: Set<String> = []
        for name in try FileManager.default.contentsOfDirectory(atPath: sources.path) where name.hasSuffix(".swift") {
            let text = try String(contentsOfFile: sources.appendingPathComponent(name).path, encoding: .utf8)
            for piece in text.components(separatedBy: "code: \"").dropFirst() { thrown.insert(String(piece.prefix { $0 != "\"" })) }
        }
        let error = (schemas["Error"]?["properties"] as? [String: Any]).flatMap { $0["error"] as? [String: Any] }
        let codes = (error?["properties"] as? [String: Any])?["code"] as? [String: Any]
        #expect(enumeration(codes) == thrown, "in the sources only: \(thrown.subtracting(enumeration(codes))); in the document only: \(enumeration(codes).subtracting(thrown))")
    }

    /// The request bodies' fields are the ones the service reads.
    @Test func requestFieldsAreTheFieldsTheServiceReads() {
        #expect(properties("AttachmentsByRequests").union(properties("AttachmentsByURLs")) == Set(AttachmentsBody.fields))
        #expect(properties("AttachmentsByRequests").symmetricDifference(properties("AttachmentsByURLs")) == ["requests", "urls"])
        #expect(properties("AttachmentRequest") == Set(AttachmentsBody.requestFields))
        let payloads = (OpenAPIContract.paths["/v1/payloads"]?["post"] as? [String: Any])?["parameters"] as? [[String: Any]] ?? []
        #expect(Set(payloads.compactMap { $0["in"] as? String == "query" ? $0["name"] as? String : nil }) == ["stripFailed", "rewrite", "files", "encrypt"])
    }

    /// The batch document, the payload answer and the NDJSON summary: their fields as written.
    @Test func batchDocumentsAreWhatTheServiceWrites() throws {
        let batch = AttachmentBatch(attachments: [], elapsed: .zero, deadline: .seconds(1), directory: "/tmp/x")
        #expect(try keys(BatchDocument(batch)) == properties("BatchDocument"))
        var answered = BatchDocument(batch, lint: [PayloadLintFinding(code: "c", severity: .warning, message: "m", path: "aps")])
        answered.payload = try JSONValue(json: Data("{}".utf8))
        #expect(try keys(answered) == properties("PayloadDocument"))
        #expect(try keys(answered.lint![0]) == properties("LintFinding"))
        let summary = StreamSummary(done: true, elapsedMs: 1, deadlineMs: 1, directory: "/tmp/x", attachments: 0, byStatus: [:])
        #expect(try keys(summary) == properties("StreamSummary"))
    }
}
