import ArgumentParser
import AttachFetch
import Foundation
import Logging
import Synchronization

@main
struct AttachFetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attach-fetch",
        abstract: "Download push-notification media, prove its type, check it against iOS's limits and make thumbnails, within a deadline.",
        discussion: """
        Prints one descriptor per URL, in input order. Exit status: 0 when every attachment \
        is ready (and, with --payload, the payload has no lint error), 1 otherwise, 2 for a \
        usage error.
        """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case json, jsonl, table
    }

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

    @Option(help: ArgumentHelp("Seconds the whole batch may take.", valueName: "SECONDS"))
    var deadline: Double = 25

    @Option(help: ArgumentHelp("Seconds one request may take, redirects included.", valueName: "SECONDS"))
    var timeout: Double = 10

    @Option(name: .customLong("connect-timeout"), help: ArgumentHelp("Seconds to connect.", valueName: "SECONDS"))
    var connectTimeout: Double = 5

    @Option(name: .customLong("stall-timeout"), help: ArgumentHelp("Seconds without any bytes before a request times out.", valueName: "SECONDS"))
    var stallTimeout: Double = 3

    @Option(name: .customLong("max-concurrency"), help: ArgumentHelp("Transfers at once.", valueName: "N"))
    var maxConcurrency: Int = 8

    @Option(help: ArgumentHelp("Existing directory where ready files are kept (default: a new directory under the system temporary directory).", valueName: "DIR"))
    var out: String?

    @Option(name: .customLong("thumbnail-size"), help: ArgumentHelp("Longest edge of thumbnails, in pixels.", valueName: "PX"))
    var thumbnailSize: Int = 320

    @Option(help: ArgumentHelp("Clipping rectangle for image thumbnails, in the unit square with the origin top-left, e.g. 0.25,0.25,0.5,0.5.", valueName: "X,Y,W,H"))
    var clip: String?

    @Option(name: .customLong("thumbnail-time"), help: ArgumentHelp("Seconds into a video for its poster-frame thumbnail (clamped to the duration; default 0).", valueName: "SECONDS"))
    var thumbnailTime: Double?

    @Flag(name: .customLong("no-normalize"), help: "Deliver media only as downloaded: refuse WebP/HEIC/AVIF and images over the limit instead of converting and fitting them.")
    var noNormalize = false

    @Option(name: .customLong("decoder-isolation"), help: "Where decoders run: 'processes' (confined worker processes; a crash costs one attachment) or 'none' (in this process; unsafe for untrusted input).")
    var decoderIsolation: String = "processes"

    @Option(help: "Output format: json, jsonl or table (default: table on a terminal, json otherwise).")
    var format: Format?

    @Flag(name: .customLong("allow-private-network"), help: "Allow loopback, private and link-local destinations (refused by default).")
    var allowPrivateNetwork = false

    @Option(name: .customLong("allow-cidr"), help: ArgumentHelp("Always allow this address range (repeatable), e.g. 10.1.2.0/24.", valueName: "CIDR"))
    var allowCIDR: [String] = []

    @Option(name: .customLong("deny-cidr"), help: ArgumentHelp("Always refuse this address range (repeatable); wins over every allowance.", valueName: "CIDR"))
    var denyCIDR: [String] = []

    @Flag(name: .shortAndLong, help: "Log what happens to standard error.")
    var verbose = false

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
        for (name, value) in [("--deadline", deadline), ("--timeout", timeout), ("--connect-timeout", connectTimeout), ("--stall-timeout", stallTimeout)] {
            guard value.isFinite, value > 0, value <= 3600 else {
                throw ValidationError("\(name) must be a number of seconds greater than 0 and at most 3600, not \(value)")
            }
        }
        guard (1...256).contains(maxConcurrency) else { throw ValidationError("--max-concurrency must be between 1 and 256") }
        guard (1...4096).contains(thumbnailSize) else { throw ValidationError("--thumbnail-size must be between 1 and 4096 pixels") }
        if clip != nil { _ = try parsedClip() }
        guard ["processes", "none"].contains(decoderIsolation) else {
            throw ValidationError("--decoder-isolation must be 'processes' or 'none', not '\(decoderIsolation)'")
        }
        if let thumbnailTime, !(thumbnailTime.isFinite && thumbnailTime >= 0) {
            throw ValidationError("--thumbnail-time must be a number of seconds, 0 or more")
        }
        _ = try ranges(allowCIDR, "--allow-cidr")
        _ = try ranges(denyCIDR, "--deny-cidr")
        if let out {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: out, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("--out \(out) is not an existing directory")
            }
            guard FileManager.default.isWritableFile(atPath: out) else {
                throw ValidationError("--out \(out) is not writable")
            }
        }
        if let input, input != "-", !FileManager.default.isReadableFile(atPath: input) {
            throw ValidationError("--input \(input) cannot be read")
        }
    }

    private func parsedClip() throws -> ClippingRectangle? {
        guard let clip else { return nil }
        let values = clip.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard values.count == 4, let x = values[0], let y = values[1], let w = values[2], let h = values[3] else {
            throw ValidationError("--clip takes four numbers X,Y,W,H, not '\(clip)'")
        }
        do {
            return try ClippingRectangle(x: x, y: y, width: w, height: h)
        } catch {
            throw ValidationError("--clip: \(error.message)")
        }
    }

    private func ranges(_ texts: [String], _ option: String) throws -> [CIDRRange] {
        try texts.map { text throws -> CIDRRange in
            do throws(AttachFetchError) {
                return try CIDRRange(text)
            } catch {
                throw ValidationError("\(option): \(error.message)")
            }
        }
    }

    private func readURLs() throws -> [String] {
        var all = urls
        if let input {
            let text: String
            if input == "-" {
                text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                guard let data = FileManager.default.contents(atPath: input) else {
                    throw ValidationError("--input \(input) cannot be read")
                }
                text = String(decoding: data, as: UTF8.self)
            }
            for line in text.split(whereSeparator: \.isNewline) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                all.append(trimmed)
            }
        }
        guard !all.isEmpty else { throw ValidationError("no URLs given (the input was empty)") }
        return all
    }

    /// The payload and the requests for the media it names.
    private func readPayload() throws -> (PushPayload, [PayloadMedia]) {
        let data: Data
        if payload == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let path = payload, let contents = FileManager.default.contents(atPath: path) else {
                throw ValidationError("--payload \(payload ?? "") cannot be read")
            }
            data = contents
        }
        do throws(AttachFetchError) {
            let parsed = try PushPayload(data: data)
            return (parsed, parsed.media(extraKeyPaths: urlKeys))
        } catch {
            throw ValidationError("--payload: \(error.message)")
        }
    }

    mutating func run() async throws {
        // Start-up: libvips maps every optional loader module it finds (ImageMagick, PDF,
        // OpenSlide, JPEG XL; all blocked here) at vips_init, about 50 ms. A VIPSHOME that holds
        // no modules skips that; the library then loads the one it uses (HEIF) itself. Set
        // before any library code runs; a VIPSHOME the user set is left alone.
        if getenv("VIPSHOME") == nil { setenv("VIPSHOME", "/dev/null", 0) }
        let clip = try parsedClip()
        var pushPayload: PushPayload?
        var payloadMedia: [PayloadMedia] = []
        let requests: [AttachmentRequest]
        if payload != nil {
            let (parsed, media) = try readPayload()
            pushPayload = parsed
            payloadMedia = media
            requests = media.map { item in
                var request = item.request()
                if request.clip == nil { request.clip = clip }
                if let thumbnailTime, request.options?.thumbnailTime == nil {
                    request.options = request.options ?? AttachmentOptions()
                    request.options?.thumbnailTime = thumbnailTime
                }
                return request
            }
        } else {
            requests = try readURLs().map {
                AttachmentRequest(url: $0, clip: clip, options: thumbnailTime.map { AttachmentOptions(thumbnailTime: $0) })
            }
        }
        var configuration = AttachFetchConfiguration()
        configuration.timeout = .init(connect: .seconds(connectTimeout), request: .seconds(timeout), stall: .seconds(stallTimeout))
        configuration.maxConcurrentTransfers = maxConcurrency
        configuration.thumbnailMaxEdge = thumbnailSize
        configuration.allowPrivateNetwork = allowPrivateNetwork
        configuration.normalize = !noNormalize
        configuration.isolation = decoderIsolation == "none" ? .none : .processes
        configuration.allowedRanges = try ranges(allowCIDR, "--allow-cidr")
        configuration.deniedRanges = try ranges(denyCIDR, "--deny-cidr")
        var logger = Logger(label: "attach-fetch") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = verbose ? .debug : .warning

        let pipeline = try AttachmentPipeline(configuration: configuration, logger: logger)
        let format = self.format ?? (isatty(STDOUT_FILENO) != 0 ? .table : .json)
        let output = Output()
        let total = requests.count
        let showProgress = format == .table && isatty(STDERR_FILENO) != 0
        let done = Atomic<Int>(0)
        let batch = await pipeline.process(requests, deadline: .seconds(deadline), outputDirectory: out) { _, descriptor in
            let finished = done.add(1, ordering: .relaxed).newValue
            switch format {
            case .jsonl:
                output.write(Output.encode(descriptor, pretty: false) + "\n")
            case .table where showProgress:
                output.writeError("\rattach-fetch: \(finished)/\(total) done (last: \(descriptor.identifier) \(descriptor.status.rawValue))\u{1B}[K")
            default:
                break
            }
        }
        if showProgress { output.writeError("\r\u{1B}[K") }
        let lint = pushPayload.map { $0.lint(media: payloadMedia) }
        if pushPayload != nil && payloadMedia.isEmpty {
            output.writeError("attach-fetch: no media URL found in the payload\n")
        }
        // With --strip-failed, standard output is the payload itself; the report moves to stderr.
        let toStandardError = stripFailed
        func write(_ text: String) {
            if toStandardError { output.writeError(text) } else { output.write(text) }
        }
        switch format {
        case .json:
            let report = Report(elapsedMs: Int(batch.elapsed.components.seconds * 1000 + batch.elapsed.components.attoseconds / 1_000_000_000_000_000),
                                deadlineMs: Int(deadline * 1000), directory: batch.directory, attachments: batch.attachments,
                                lint: lint)
            write(Output.encode(report, pretty: true) + "\n")
        case .jsonl:
            for finding in lint ?? [] { write(Output.encode(["lint": finding], pretty: false) + "\n") }
        case .table:
            write(Table.render(batch) + Table.render(lint ?? []))
        }
        if stripFailed, let pushPayload {
            let failed = zip(payloadMedia, batch.attachments).filter { $0.1.status != .ready }.map { $0.0.entry }
            output.write(String(decoding: pushPayload.removing(failed), as: UTF8.self) + "\n")
        }
        let allReady = batch.attachments.allSatisfy { $0.status == .ready }
        let lintErrors = (lint ?? []).contains { $0.severity == .error }
        if !allReady || lintErrors { throw ExitCode(1) }
    }

    /// swift-argument-parser exits 64 on usage errors; this tool's contract says 2.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}

/// The `--format json` document.
struct Report: Encodable {
    var elapsedMs: Int
    var deadlineMs: Int
    /// Where ready files were kept (added field; absent when nothing was kept).
    var directory: String?
    var attachments: [AttachmentDescriptor]
    /// Added for --payload: findings about the payload itself.
    var lint: [PayloadLintFinding]?
}

/// Serialises writes from the pipeline's callback threads.
final class Output: Sendable {
    private let lock = NSLock()

    func write(_ text: String) {
        lock.withLock { FileHandle.standardOutput.write(Data(text.utf8)) }
    }

    func writeError(_ text: String) {
        lock.withLock { FileHandle.standardError.write(Data(text.utf8)) }
    }

    static func encode<T: Encodable>(_ value: T, pretty: Bool) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these plain value types cannot fail.
        return String(decoding: (try? encoder.encode(value)) ?? Data("{}".utf8), as: UTF8.self)
    }
}

enum Table {
    static func render(_ batch: AttachmentBatch) -> String {
        var rows: [[String]] = [["#", "STATUS", "KIND", "SIZE", "PIXELS", "IDENTIFIER", "REASON / NOTE"]]
        for (index, a) in batch.attachments.enumerated() {
            rows.append([
                "\(index + 1)", a.status.rawValue, a.role == .avatar ? "avatar" : (a.kind?.rawValue ?? "-"),
                a.bytes.map(formatBytes) ?? "-",
                (a.width != nil && a.height != nil) ? "\(a.width!)x\(a.height!)" : "-",
                a.identifier,
                a.reason.map { "\($0.code.rawValue): \($0.message)" } ?? note(a),
            ])
        }
        let widths = (0..<7).map { column in rows.map { $0[column].count }.max() ?? 0 }
        var text = ""
        for row in rows {
            let cells = row.enumerated().map { column, cell in
                column == 6 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }
            text += cells.joined(separator: "  ").trimmingCharacters(in: .whitespaces) + "\n"
        }
        let ready = batch.attachments.filter { $0.status == .ready }.count
        let elapsed = batch.elapsed.components.seconds * 1000 + batch.elapsed.components.attoseconds / 1_000_000_000_000_000
        text += "\n\(ready)/\(batch.attachments.count) ready in \(elapsed) ms"
        if let directory = batch.directory { text += "; files in \(directory)" }
        return text + "\n"
    }

    /// For a ready attachment: what was done to it, and what the probe found.
    static func note(_ a: AttachmentDescriptor) -> String {
        var parts: [String] = []
        if let transforms = a.transforms, !transforms.isEmpty {
            let source = [a.sourceMimeType, a.sourceBytes.map(formatBytes)].compactMap { $0 }.joined(separator: ", ")
            parts.append(transforms.map(\.rawValue).joined(separator: "+") + (source.isEmpty ? "" : " from \(source)"))
        } else if let source = a.sourceMimeType, source != a.mimeType {
            parts.append("sniffed \(source), streams say \(a.mimeType ?? "?")")
        }
        let codecs = [a.videoCodec, a.audioCodec].compactMap { $0 }
        if !codecs.isEmpty { parts.append(codecs.joined(separator: "/")) }
        if let duration = a.duration { parts.append(String(format: "%.1f s", duration)) }
        return parts.joined(separator: "; ")
    }

    static func render(_ findings: [PayloadLintFinding]) -> String {
        guard !findings.isEmpty else { return "" }
        var text = "\nPayload lint:\n"
        for finding in findings {
            let place = finding.path.isEmpty ? "" : " at \(finding.path)"
            text += "  \(finding.severity.rawValue)  \(finding.code)\(place): \(finding.message)\n"
        }
        return text
    }

    static func formatBytes(_ bytes: Int64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        if bytes < 1024 * 1024 { return String(format: "%.1f KiB", Double(bytes) / 1024) }
        return String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }
}
