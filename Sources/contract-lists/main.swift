// Writes the tables of reason codes from `ReasonCode.contracts`, and of the descriptor's fields
// from `AttachmentDescriptor.fieldContracts`, their one definitions: in docs/descriptor.md and
// the DocC catalogue's DescriptorContract.md (between their `contract-lists` markers).
// openapi.json's enum of `Reason.code` is written with the descriptor's other schemas by
// `openapi-document`.
//
//   contract-lists            rewrite the files that differ
//   contract-lists --check    change nothing; name each file that differs and exit 1
//
// Run from the package's root (Core's ReasonCodeContractTests runs it with --check).
import AttachFetchCore
import Foundation

struct GeneratedList {
    var path: String
    var render: (String) throws -> String
}

struct ContractListError: Error, CustomStringConvertible { var description: String }

/// `text` with what lies between the line `begin` and the line `end` replaced by `body`.
func replacing(between begin: String, and end: String, in text: String, with body: String, file: String) throws -> String {
    guard let start = text.range(of: begin + "\n"), let stop = text.range(of: "\n" + end, range: start.upperBound..<text.endIndex) else {
        throw ContractListError(description: "\(file): the markers \(begin) and \(end) are not both there")
    }
    return String(text[..<start.upperBound]) + body + String(text[stop.lowerBound...])
}

/// The Markdown table of codes, their status and when each is given; `name` writes a code's cell.
func table(_ name: (ReasonCode) -> String) -> String {
    (["| code | status | when |", "| --- | --- | --- |"]
        + ReasonCode.contracts.map { "| \(name($0.code)) | \($0.status.rawValue) | \($0.when) |" }).joined(separator: "\n")
}

/// The Markdown table of the descriptor's fields; `name` writes a field's name, `prose` a cell.
func fieldTable(_ name: (String) -> String, _ prose: (String) -> String) -> String {
    (["| field | present | meaning |", "| --- | --- | --- |"]
        + AttachmentDescriptor.fieldContracts.map {
            "| \($0.fields.map(name).joined(separator: ", ")) | \(prose($0.present)) | \(prose($0.meaning)) |"
        }).joined(separator: "\n")
}

/// `text` with each Markdown link `[words](target)` left as its words: the docs' links are
/// relative to docs/, which the DocC catalogue is not.
func unlinked(_ text: String) -> String {
    text.replacing(/\[([^\]]+)\]\([^)]+\)/) { String($0.1) }
}

let lists = [
    GeneratedList(path: "docs/descriptor.md") { text in
        let codes = try replacing(between: "<!-- contract-lists: reason codes -->", and: "<!-- contract-lists: end -->", in: text,
                                  with: table { "`\($0.rawValue)`" }, file: "docs/descriptor.md")
        return try replacing(between: "<!-- contract-lists: descriptor fields -->", and: "<!-- contract-lists: end -->", in: codes,
                             with: fieldTable({ "`\($0)`" }, { $0 }), file: "docs/descriptor.md")
    },
    GeneratedList(path: "Sources/AttachFetch/AttachFetch.docc/DescriptorContract.md") { text in
        let codes = try replacing(between: "<!-- contract-lists: reason codes -->", and: "<!-- contract-lists: end -->", in: text,
                                  with: table { "``/AttachFetchCore/ReasonCode/\($0.rawValue)``" }, file: "DescriptorContract.md")
        return try replacing(between: "<!-- contract-lists: descriptor fields -->", and: "<!-- contract-lists: end -->", in: codes,
                             with: fieldTable({ "``/AttachFetchCore/AttachmentDescriptor/\($0)``" }, unlinked), file: "DescriptorContract.md")
    },
]

let check = CommandLine.arguments.dropFirst().contains("--check")
var differing: [String] = []
do {
    for list in lists {
        let url = URL(fileURLWithPath: list.path)
        let text = try String(contentsOf: url, encoding: .utf8)
        let generated = try list.render(text)
        guard generated != text else { continue }
        differing.append(list.path)
        if !check { try generated.write(to: url, atomically: true, encoding: .utf8) }
    }
} catch {
    FileHandle.standardError.write(Data("contract-lists: \(error)\n".utf8))
    exit(2)
}
if check && !differing.isEmpty {
    FileHandle.standardError.write(Data("""
        contract-lists: these files differ from ReasonCode.contracts; run `swift run contract-lists` and commit them:
        \(differing.map { "  " + $0 }.joined(separator: "\n"))

        """.utf8))
    exit(1)
}
print(check ? "contract-lists: every list is what ReasonCode.contracts says" : "contract-lists: \(differing.isEmpty ? "nothing to change" : "wrote " + differing.joined(separator: ", "))")
