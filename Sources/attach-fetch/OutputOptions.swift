import ArgumentParser
import Foundation

/// Where ready files go, how the report looks, and how talkative the command is.
struct OutputOptions: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case json, jsonl, table, html
    }

    @Option(help: ArgumentHelp("Existing directory where ready files are kept (default: a new directory under the system temporary directory).", valueName: "DIR"))
    var out: String?

    @Option(help: "Output format: json, jsonl, table, or html (one self-contained page, the inspector's view, thumbnails inlined) (default: table on a terminal, json otherwise).")
    var format: Format?

    @Flag(name: .shortAndLong, help: "Log what happens to standard error.")
    var verbose = false

    func validate() throws {
        if let out {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: out, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("--out \(out) is not an existing directory")
            }
            guard FileManager.default.isWritableFile(atPath: out) else {
                throw ValidationError("--out \(out) is not writable")
            }
        }
    }
}
