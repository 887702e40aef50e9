// Writes openapi.json's paths from the service's `Routes` table (OpenAPIPaths.swift). Apart
// from `contract-lists` because it needs the service's target, which the reason codes' tool
// (run by Core's tests) must not.
//
//   openapi-paths            rewrite the document if it differs
//   openapi-paths --check    change nothing; say so and exit 1 if it differs
//
// Run from the package's root (ContractListTests runs it with --check).
import Foundation

struct PathsError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

let document = "Sources/AttachFetchService/OpenAPI/openapi.json"
let check = CommandLine.arguments.dropFirst().contains("--check")
do {
    let url = URL(fileURLWithPath: document)
    let text = try String(contentsOf: url, encoding: .utf8)
    let generated = try renderPaths(text)
    if generated == text {
        print("openapi-paths: \(document)'s paths are the Routes table")
    } else if check {
        FileHandle.standardError.write(Data("openapi-paths: \(document)'s paths differ from the Routes table; run `swift run openapi-paths` and commit it\n".utf8))
        exit(1)
    } else {
        try generated.write(to: url, atomically: true, encoding: .utf8)
        print("openapi-paths: wrote \(document)")
    }
} catch {
    FileHandle.standardError.write(Data("openapi-paths: \(error)\n".utf8))
    exit(2)
}
