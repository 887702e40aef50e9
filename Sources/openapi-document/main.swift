// Writes openapi.json's paths from the service's `Routes` table (DocumentPaths.swift) and its
// descriptor schemas from the descriptor's `Codable` definition (DescriptorSchemas.swift);
// everything else in the document is kept byte for byte. Apart from `contract-lists` because
// it needs the service's target, which the reason codes' tool (run by Core's tests) must not.
//
//   openapi-document            rewrite the document if it differs
//   openapi-document --check    change nothing; say so and exit 1 if it differs
//
// Run from the package's root (ContractListTests runs it with --check).
import Foundation

struct DocumentError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

let path = "Sources/AttachFetchService/OpenAPI/openapi.json"
let check = CommandLine.arguments.dropFirst().contains("--check")
do {
    let url = URL(fileURLWithPath: path)
    let text = try String(contentsOf: url, encoding: .utf8)
    var document = try OrderedJSON(parsing: text)
    try writePaths(into: &document)
    try writeDescriptorSchemas(into: &document)
    let generated = document.text() + "\n"
    if generated == text {
        print("openapi-document: \(path) is what the Routes table and the descriptor's Codable definition say")
    } else if check {
        FileHandle.standardError.write(Data("openapi-document: \(path) differs from the Routes table or the descriptor's Codable definition; run `swift run openapi-document` and commit it\n".utf8))
        exit(1)
    } else {
        try generated.write(to: url, atomically: true, encoding: .utf8)
        print("openapi-document: wrote \(path)")
    }
} catch {
    FileHandle.standardError.write(Data("openapi-document: \(error)\n".utf8))
    exit(2)
}
