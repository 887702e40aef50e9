import AttachFetchRuntime
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
internal import Tracing

/// Makes one URL's result in the work store: the body fetched (or a first run's kept body
/// taken again), the stages run on it, the files moved to their result names. What it makes
/// is shared by whoever waits for that URL, which `AttachmentPipeline` decides (coalescing,
/// the cache, the replicas' store); this type neither knows nor keeps who.
struct ResultMaker: Sendable {
    let configuration: AttachFetchConfiguration
    let engine: TransferEngine
    let stages: RacedRunner
    let store: WorkStore
    let trustStore: TrustStore?

    typealias WorkOutcome = AttachmentPipeline.WorkOutcome
    typealias KeptSource = AttachmentPipeline.KeptSource

    /// The work itself: the body fetched into the store, the stages run, the files moved to
    /// their result names. The ledger removes whatever is not delivered, wherever it stops.
    /// With `resuming`, the body a first run kept is used again instead of being fetched.
    func work(_ request: AttachmentRequest, platforms: Set<Platform>, number: Int, directory: String,
              validators: CacheValidators?, batch: Batch, logger: Logger, resuming kept: KeptSource? = nil) async -> WorkOutcome {
        let ledger = FileLedger(afterLateRemoval: store.tidy)
        defer { ledger.close() }
        let fetched: KeptSource
        if let kept {
            guard let body = kept.body, let path = ledger.own(body) else {
                return .made(kept.descriptor.failed(Reason(code: .ioError, message: "the kept source was closed")), files: [], headers: kept.headers)
            }
            kept.resume(at: path)
            fetched = kept
        } else {
            switch await download(request, number: number, directory: directory, validators: validators, batch: batch, ledger: ledger) {
            case .left(let outcome): return outcome
            case .right(let source): fetched = source
            }
        }
        var work = AttachmentWork(
            descriptor: fetched.descriptor,
            source: fetched.source,
            plan: .init(shape: request.role == .avatar ? .squareCenter : .clip(request.clip ?? .whole),
                        thumbnailTime: request.options?.thumbnailTime, imagesOnly: request.role == .avatar,
                        convertedBase: "\(directory)/.norm-\(number)", thumbnailBase: "\(directory)/.thumb-\(number)",
                        variantBase: "\(directory)/.variant-\(number)", workDirectory: directory, platforms: platforms,
                        encryption: configuration.encrypts(request) ? configuration.mediaEncryption : nil,
                        transcoding: configuration.transcoding(for: request), crop: request.pictureCrop, background: kept != nil),
            ledger: ledger)
        if let reason = await stages.run(Stage.afterDownload, on: &work, batch: batch) {
            return .made(work.descriptor.failed(reason), files: [], headers: fetched.headers)
        }
        let (ready, files, unnamed) = moveIntoPlace(work, name: "r\(number)", directory: directory, logger: logger)
        // A transcode the deadline cut short, in a pipeline that keeps results: its source is
        // kept for the campaign's whole clip (`ResultCaching.wholeClipBudget`).
        let resumable = kept == nil && ready.status == .ready && ready.skippedAtDeadline?.contains("transcode") == true
            && (configuration.cache?.wholeClipBudget ?? .zero) > .zero ? fetched.keptBody : nil
        return .made(ready, files: files, unnamed: unnamed, sizes: Self.knownSizes(of: ready, thumbnail: work.thumbnail),
                     headers: fetched.headers, resumable: resumable)
    }

    private enum Fetched {
        case left(WorkOutcome)
        case right(KeptSource)
    }

    /// Fetches the body into the store: a finished outcome (a failure, a 304), or the source.
    private func download(_ request: AttachmentRequest, number: Int, directory: String, validators: CacheValidators?,
                          batch: Batch, ledger: FileLedger) async -> Fetched {
        var descriptor = AttachmentPipeline.builder(for: request, index: number, start: batch.start)
        let namedBodyPath = "\(directory)/.part-\(number)"
        var spec = transferSpec(for: request, bodyPath: namedBodyPath, batch: batch)
        spec.bodyDirectory = directory
        spec.validators = validators
        let download = InstrumentationSystem.tracer.startSpan("attach_fetch.download", ofKind: .client)
        ClientSpanAttributes.record(url: request.url, on: download)
        let fetchStarted = ContinuousClock.now
        let outcome = await engine.fetch(spec)
        PipelineSpans.record(outcome, started: fetchStarted, on: download)
        download.end()
        // The transfer removed or dropped the body when it failed.
        let bodyPath = outcome.body.flatMap { ledger.own($0) } ?? namedBodyPath
        if outcome.body == nil && outcome.failure == nil { ledger.own(namedBodyPath) }
        if outcome.notModified { return .left(.notModified(outcome.cacheHeaders)) }
        descriptor.record(outcome)
        func failed(_ reason: Reason) -> Fetched { .left(.made(descriptor.failed(reason), files: [], headers: outcome.cacheHeaders)) }
        if let reason = outcome.failure { return failed(batch.settle(reason, queued: outcome.endedWhileQueued)) }
        guard let sniffed = outcome.sniffedMIME, let type = outcome.mediaType, let sha256 = outcome.sha256 else {
            return failed(Reason(code: .ioError, message: "the transfer ended without a type"))
        }
        return .right(KeptSource(body: outcome.body, descriptor: descriptor, headers: outcome.cacheHeaders,
                                 source: .init(path: bodyPath, sniffedMIME: sniffed, type: type, bytes: outcome.bytes, sha256: sha256)))
    }

    private func transferSpec(for request: AttachmentRequest, bodyPath: String, batch: Batch) -> TransferSpec {
        var timeout = configuration.timeout.settings
        if let shorter = request.timeout ?? (request.role == .avatar ? configuration.avatarTimeout : nil) {
            timeout.request = min(timeout.request, shorter)
        }
        var spec = TransferSpec(batch: batch.id, url: request.url, origin: URLCheck.origin(of: request.url), bodyPath: bodyPath, runningUnder: batch, timeout: timeout,
                                sizeLimits: configuration.sizeLimits, maxRedirects: configuration.maxRedirects,
                                addressPolicy: configuration.addressPolicy, imagesOnly: request.role == .avatar,
                                normalize: configuration.normalize, trustStore: trustStore, proxy: configuration.proxy)
        spec.transcode = configuration.transcoding(for: request).enabled
        return spec
    }

    /// Moves the delivered file, its thumbnail and its variants to their result names in
    /// `directory`. Never replaces a file; a thumbnail or variant that cannot be moved is left out.
    /// An unnamed file is not moved: it stays unnamed, held by the result, until a caller's
    /// link names it; its working path gains its format's extension.
    private func moveIntoPlace(_ work: AttachmentWork, name: String, directory: String,
                               logger: Logger) -> (AttachmentDescriptor, files: [String], unnamed: [UnnamedFile]) {
        var unnamed: [UnnamedFile] = []
        /// The file's result path, or a problem.
        /// A result is final, and read-only (0400) as every file a decoder worker reads is: the
        /// body and the keeper's sealed copies already are; what this process made is made so.
        func keep(_ path: String, as finalPath: String, format: String) -> Result<String, Reason> {
            if let file = work.ledger.deliver(path) {
                _ = fchmod(file.descriptor, UnnamedFile.readOnlyMode)
                unnamed.append(file)
                return .success(UnnamedFile.path(of: path, withExtension: format))
            }
            if let problem = FileNames.moveNoReplace(path, to: finalPath) {
                return .failure(Reason(code: .ioError, message: problem))
            }
            _ = chmod(finalPath, UnnamedFile.readOnlyMode)
            work.ledger.deliver(path)
            return .success(finalPath)
        }
        let file = work.admitted
        let finalPath: String
        switch keep(file.path, as: "\(directory)/\(name).\(file.type.fileExtension)", format: file.type.fileExtension) {
        case .success(let path): finalPath = path
        case .failure(let problem): return (work.descriptor.failed(problem), [], [])
        }
        var files = [finalPath]
        var thumbnailPath: String?
        if let made = work.thumbnail {
            let format = (made.file as NSString).pathExtension
            switch keep(made.file, as: "\(directory)/\(name).thumb.\(format)", format: format) {
            case .success(let path):
                thumbnailPath = path
                files.append(path)
            case .failure(let problem):
                logger.debug("thumbnail not kept", metadata: ["problem": "\(problem.message)"])
            }
        }
        var variantPaths: [Platform: String] = [:]
        for (platform, source) in work.variantFiles {
            let format = (source as NSString).pathExtension
            if case .success(let path) = keep(source, as: "\(directory)/\(name).\(platform.rawValue).\(format)", format: format) {
                variantPaths[platform] = path
                files.append(path)
            }
        }
        return (work.ready(file: finalPath, thumbnailFile: thumbnailPath, variantFiles: variantPaths), files, unnamed)
    }

    /// The sizes of a ready result's files as the work knows them: the delivered file's and the
    /// variants' from the descriptor, the thumbnail's from its writer.
    private static func knownSizes(of ready: AttachmentDescriptor, thumbnail: ThumbnailOutcome?) -> [String: Int64] {
        var sizes: [String: Int64] = [:]
        if let file = ready.file, let bytes = ready.bytes { sizes[file] = bytes }
        if let file = ready.thumbnail?.file, let bytes = thumbnail?.bytes { sizes[file] = bytes }
        for variant in (ready.variants ?? [:]).values {
            if let file = variant.file, let bytes = variant.bytes { sizes[file] = bytes }
        }
        return sizes
    }
}
