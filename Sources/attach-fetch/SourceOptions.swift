import ArgumentParser
import Foundation

/// Where the URLs come from: the command line, a file, or a push payload.
struct SourceOptions: ParsableArguments {
    @Argument(help: "Media URLs (http or https).")
    var urls: [String] = []

    @Option(help: ArgumentHelp("Read URLs from FILE, one per line ('-' = standard input; blank lines and lines starting with # are skipped).", valueName: "FILE"))
    var input: String?

    @Option(help: ArgumentHelp("Read a push payload (APNs, FCM, or a provider's; '-' = standard input), fetch the media it names and lint it.", valueName: "FILE"))
    var payload: String?

    @Option(name: .customLong("url-key"), help: ArgumentHelp("With --payload: also take the URL at this dot-separated key path (repeatable).", valueName: "A.B.C"))
    var urlKeys: [String] = []

    @Flag(name: .customLong("strip-failed"), help: "With --payload: print the payload back, without the media entries that are not ready (the report goes to standard error). Off by default.")
    var stripFailed = false

    func validate() throws {
        if payload != nil {
            guard urls.isEmpty && input == nil else {
                throw ValidationError("--payload cannot be combined with URLs or --input")
            }
            if let payload, payload != "-", !FileManager.default.isReadableFile(atPath: payload) {
                throw ValidationError("--payload \(payload) cannot be read")
            }
        } else {
            if urls.isEmpty && input == nil {
                throw ValidationError("give at least one URL, --input FILE or --payload FILE")
            }
            if stripFailed { throw ValidationError("--strip-failed needs --payload") }
            if !urlKeys.isEmpty { throw ValidationError("--url-key needs --payload") }
        }
        if urlKeys.contains(where: { $0.isEmpty || $0.split(separator: ".", omittingEmptySubsequences: false).contains("") }) {
            throw ValidationError("--url-key takes a dot-separated key path such as data.media.url")
        }
        if let input, input != "-", !FileManager.default.isReadableFile(atPath: input) {
            throw ValidationError("--input \(input) cannot be read")
        }
    }
}
