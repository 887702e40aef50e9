import ArgumentParser
import AttachFetch
import AttachFetchService
import Foundation
import Logging
import Synchronization

/// `attach-fetch [options] URL...` (the default subcommand, `fetch`).
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Download push-notification media, prove its type, check it against iOS's (and Android's) limits and make thumbnails, within a deadline.",
        discussion: """
        Prints one descriptor per URL, in input order. Exit status: 0 when every attachment \
        is ready (and, with --payload, the payload has no lint error), 1 otherwise, 2 for a \
        usage error.
        """
    )

    @OptionGroup(title: "What to fetch") var source: SourceOptions
    @OptionGroup(title: "Pipeline") var pipeline: PipelineOptions
    @OptionGroup(title: "Publishing and platforms") var publishing: PublishingOptions
    @OptionGroup(title: "Output") var output: OutputOptions
    // Here, not among the publishing options that `serve` shares: the service takes it per request.
    @Flag(help: "With --payload and --publish-dir: print the payload with every media URL replaced by the published file each key's platforms can show (media that is not ready is removed; the report goes to standard error).")
    var rewrite = false

    func validate() throws {
        // Only the service encrypts per request: here a key without --encrypt-media would do nothing.
        if publishing.mediaKeyFile != nil && !publishing.encryptMedia {
            throw ValidationError("--media-key-file goes with --encrypt-media")
        }
        if rewrite {
            guard source.payload != nil else { throw ValidationError("--rewrite needs --payload") }
            guard publishing.publishDir != nil || publishing.publishTo != nil else { throw ValidationError("--rewrite needs --publish-dir and --public-base") }
            guard !source.stripFailed else { throw ValidationError("--rewrite already removes media that is not ready; drop --strip-failed") }
        }
    }

    /// The payload (parsed, and as given) and the requests for the media it names.
    private func readPayload() throws -> (PushPayload, [PayloadMedia], Data) {
        let data: Data
        if source.payload == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let path = source.payload, let contents = FileManager.default.contents(atPath: path) else {
                throw ValidationError("--payload \(source.payload ?? "") cannot be read")
            }
            data = contents
        }
        do throws(AttachFetchError) {
            let parsed = try PushPayload(data: data)
            return (parsed, parsed.media(extraKeyPaths: source.urlKeys), data)
        } catch {
            throw ValidationError("--payload: \(error.message)")
        }
    }

    mutating func run() async throws {
        let clip = try pipeline.parsedClip()
        let crop = try pipeline.parsedCrop()
        let thumbnailTime = pipeline.thumbnailTime
        var pushPayload: PushPayload?
        var payloadMedia: [PayloadMedia] = []
        var payloadData: Data?
        var requests: [AttachmentRequest] = []
        var configuration = try pipeline.configuration()
        try publishing.apply(to: &configuration)
        // URLs (arguments, then --input) are read as the batch asks for them; the first one now,
        // so that an empty input is a usage error before anything starts.
        var urls: URLRequests?
        if source.payload != nil {
            let (parsed, media, data) = try readPayload()
            pushPayload = parsed
            payloadMedia = media
            payloadData = data
            // One set for the whole payload, so that a URL under keys of both platforms is fetched once.
            let platforms = PushPayload.platforms(for: media, configured: configuration.platforms)
            requests = media.map { item in
                var request = item.request(platforms: platforms)
                if request.clip == nil { request.clip = clip }
                (request.crop, request.focus) = (request.crop ?? crop.mode, request.focus ?? crop.focus)
                if let thumbnailTime, request.options?.thumbnailTime == nil {
                    request.options = request.options ?? AttachmentOptions()
                    request.options?.thumbnailTime = thumbnailTime
                }
                return request
            }
        } else {
            let input = InputURLs(arguments: source.urls, input: source.input)
            var lines = input.makeAsyncIterator()
            guard let first = await lines.next() else {
                throw ValidationError(input.failure ?? "no URLs given (the input was empty)")
            }
            urls = URLRequests(first: first, rest: lines, input: input) {
                var request = AttachmentRequest(url: $0, clip: clip, options: thumbnailTime.map { AttachmentOptions(thumbnailTime: $0) })
                (request.crop, request.focus) = (crop.mode, crop.focus)
                return request
            }
        }
        var logger = Logger(label: "attach-fetch") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = output.verbose ? .debug : .warning

        let attachmentPipeline = try AttachmentPipeline(configuration: configuration, logger: logger)
        logger.debug("decoders: \(attachmentPipeline.decoderConfinement.summary)")
        do { try await attachmentPipeline.checkObjectStore() } catch {
            await attachmentPipeline.shutdown()
            throw ValidationError("--publish-to: \(error.message)")
        }
        let format = self.output.format ?? (isatty(STDOUT_FILENO) != 0 ? .table : .json)
        let output = Output()
        if let urls {
            let run = try await StreamedRun(format: format, output: output)
                .run(urls, on: attachmentPipeline, deadline: .seconds(pipeline.deadline), outputDirectory: self.output.out)
            await attachmentPipeline.shutdown()
            if let failure = urls.input.failure { output.writeError("attach-fetch: \(failure)\n") }
            if run.notReady > 0 || urls.input.failure != nil || output.lostLines.load(ordering: .relaxed) > 0 { throw ExitCode(1) }
            return
        }
        let total = requests.count
        let showProgress = format == .table && isatty(STDERR_FILENO) != 0
        let done = Atomic<Int>(0)
        let batch = await attachmentPipeline.process(requests, deadline: .seconds(pipeline.deadline),
                                                     outputDirectory: self.output.out) { _, descriptor in
            let finished = done.add(1, ordering: .relaxed).newValue
            switch format {
            case .jsonl:
                output.writeJSONLine(descriptor)
            case .table where showProgress:
                output.writeError("\rattach-fetch: \(finished)/\(total) done (last: \(descriptor.identifier) \(descriptor.status.rawValue))\u{1B}[K")
            default:
                break
            }
        }
        await attachmentPipeline.shutdown()
        if showProgress { output.writeError("\r\u{1B}[K") }
        // Compact, one line: the bytes printed are the bytes the lint measures, as APNs counts them.
        let rewritten = rewrite ? pushPayload?.rewritten(media: payloadMedia, descriptors: batch.attachments, pretty: false) : nil
        let lint = pushPayload.map {
            $0.lint(media: payloadMedia, descriptors: batch.attachments)
                + $0.platformLint(media: payloadMedia, descriptors: batch.attachments, rewriting: rewrite)
                + (rewritten.map(PushPayload.rewriteLint) ?? [])
        }
        if pushPayload != nil && payloadMedia.isEmpty {
            output.writeError("attach-fetch: no media URL found in the payload\n")
        }
        // With --strip-failed or --rewrite, standard output is the payload itself; the report moves to stderr.
        let toStandardError = source.stripFailed || rewrite
        func write(_ text: String) {
            if toStandardError { output.writeError(text) } else { output.write(text) }
        }
        switch format {
        case .json:
            let report = BatchDocument(batch, lint: lint)
            write(try JSONWriter.string(report, layout: .pretty) + "\n")
        case .jsonl:
            for finding in lint ?? [] { write(try JSONWriter.string(["lint": finding]) + "\n") }
        case .table:
            write(Table.render(batch) + Table.render(lint ?? []))
        case .html:
            let document = try JSONWriter.string(BatchDocument(batch, lint: lint))
            do {
                write(try InspectorPage.report(kind: pushPayload == nil ? .attachments : .payload, result: Data(document.utf8),
                                               payload: payloadData, descriptors: batch.attachments))
            } catch {
                output.writeError("attach-fetch: cannot write the report: \(error.message)\n")
                throw ExitCode(1)
            }
        }
        if source.stripFailed, let pushPayload {
            let failed = zip(payloadMedia, batch.attachments).filter { $0.1.status != .ready }.map { $0.0.entry }
            output.write(String(decoding: pushPayload.removing(failed), as: UTF8.self) + "\n")
        }
        if let rewritten {
            output.write(String(decoding: rewritten, as: UTF8.self) + "\n")
        }
        let allReady = batch.attachments.allSatisfy { $0.status == .ready }
        let lintErrors = (lint ?? []).contains { $0.severity == .error }
        if !allReady || lintErrors || output.lostLines.load(ordering: .relaxed) > 0 { throw ExitCode(1) }
    }
}
