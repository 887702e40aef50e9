// Writes every list of reason codes that is not Swift from `ReasonCode.contracts`, its one
// definition: openapi.json's enum of `Reason.code`, and the tables of docs/descriptor.md and
// the DocC catalogue's DescriptorContract.md (between their `contract-lists` markers).
//
//   contract-lists            rewrite the files that differ
//   contract-lists --check    change nothing; name each file that differs and exit 1
//
// Run from the package's root (scripts/test.sh runs it with --check).
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

let lists = [
    GeneratedList(path: "Sources/AttachFetchService/OpenAPI/openapi.json") { text in
        // The enum that follows `"Reason"`'s `"code"` property, in the file's own indentation.
        guard let reason = text.range(of: "\"Reason\": {"), let code = text.range(of: "\"code\": {", range: reason.upperBound..<text.endIndex),
              let open = text.range(of: "\"enum\": [\n", range: code.upperBound..<text.endIndex),
              let close = text.range(of: "]", range: open.upperBound..<text.endIndex) else {
            throw ContractListError(description: "openapi.json: no enum under Reason.code")
        }
        let lineStart = text[..<open.lowerBound].lastIndex(of: "\n").map { text.index(after: $0) } ?? text.startIndex
        let indent = String(text[lineStart..<open.lowerBound])
        let items = ReasonCode.allKnown.map { "\(indent)  \"\($0.rawValue)\"" }.joined(separator: ",\n")
        return String(text[..<open.upperBound]) + items + "\n" + indent + String(text[close.lowerBound...])
    },
    GeneratedList(path: "docs/descriptor.md") { text in
        try replacing(between: "<!-- contract-lists: reason codes -->", and: "<!-- contract-lists: end -->", in: text,
                      with: table { "`\($0.rawValue)`" }, file: "docs/descriptor.md")
    },
    GeneratedList(path: "Sources/AttachFetch/AttachFetch.docc/DescriptorContract.md") { text in
        try replacing(between: "<!-- contract-lists: reason codes -->", and: "<!-- contract-lists: end -->", in: text,
                      with: table { "``/AttachFetchCore/ReasonCode/\($0.rawValue)``" }, file: "DescriptorContract.md")
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
