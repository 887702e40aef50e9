import AttachFetch
import Foundation

/// The JSON document of a batch: the CLI's `--format json` and the service's answer.
public struct BatchDocument: Encodable, Sendable {
    /// Time from the call to its return, in milliseconds.
    public var elapsedMs: Int
    /// The deadline the batch ran under, in milliseconds.
    public var deadlineMs: Int
    /// Where ready files were kept (absent when nothing was kept).
    public var directory: String?
    /// The descriptors, in request order.
    public var attachments: [AttachmentDescriptor]
    /// Findings about the payload itself.
    public var lint: [PayloadLintFinding]?
    /// The payload, stripped or
    /// rewritten, as the JSON value it is.
    public var payload: JSONValue?

    /// The document of `batch`, with the payload's lint when there is one.
    public init(_ batch: AttachmentBatch, lint: [PayloadLintFinding]? = nil) {
        elapsedMs = batch.elapsed.wholeMilliseconds
        deadlineMs = batch.deadline.wholeMilliseconds
        directory = batch.directory
        attachments = batch.attachments
        self.lint = lint
    }
}

extension BatchDocument: CompactJSONWritable {
    /// A document with lint or a payload is left to `JSONEncoder` (`JSONValue` has no writer of
    /// its own): only `/v1/payloads` answers carry them.
    package func write(to json: inout CompactJSON) {
        guard lint == nil, payload == nil else { return json.fail() }
        json.object { json in
            json.key("attachments")
            json.array(attachments) { $0.value($1) }
            json.field("deadlineMs", deadlineMs)
            json.field("directory", directory)
            json.field("elapsedMs", elapsedMs)
        }
    }
}

extension Duration {
    var wholeMilliseconds: Int { Int(components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000) }
}

/// The closing line of an NDJSON stream.
struct StreamSummary: Encodable {
    var done: Bool
    var elapsedMs: Int
    var deadlineMs: Int
    /// Absent for a call that kept no files (`"files": "none"`).
    var directory: String?
    var attachments: Int
    var byStatus: [String: Int]
}
