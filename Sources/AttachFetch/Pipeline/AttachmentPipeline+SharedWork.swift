import AttachFetchRuntime
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization
internal import Tracing

extension AttachmentPipeline {
    // MARK: Shared work

    /// Makes the result for one URL and its options, once for everyone waiting: fetched
    /// (conditionally when `stale` may still be good), the stages run, the files moved into
    /// the work store. It runs under `batch`: the deadline of the caller that started it,
    /// moved later when a caller with more time joins. With `resuming`, it is a campaign's
    /// whole clip, made again from the source a first run kept, under its own budget.
    func produce(_ request: AttachmentRequest, platforms: Set<Platform>, stale: SharedResult?,
                 batch: Batch, logger: Logger, resuming kept: KeptSource? = nil) async -> SharedResults.Produced {
        let number = workNumbers.add(1, ordering: .relaxed).newValue
        // The work's span: a child of the caller that started it; callers it is shared with link to it.
        let span = InstrumentationSystem.tracer.startSpan(kept == nil ? "attach_fetch.work" : "attach_fetch.whole_clip")
        defer { span.end() }
        ClientSpanAttributes.record(url: request.url, on: span)
        let outcome: WorkOutcome
        do {
            let directory = try store.acquire()
            defer { store.release() }
            var result: WorkOutcome?
            await batch.racingDeadline([{ await ServiceContext.withValue(span.context) {
                if let kept {
                    return await self.wholeClip(request, platforms: platforms, number: number, directory: directory,
                                                kept: kept, batch: batch, logger: logger)
                }
                guard let shared = self.storeResults else {
                    return await self.work(request, platforms: platforms, number: number, directory: directory,
                                           validators: stale?.headers.validators, batch: batch, logger: logger)
                }
                return await self.sharedWork(request, platforms: platforms, number: number, directory: directory,
                                             stale: stale, shared: shared, batch: batch, logger: logger)
            } }]) { _, finished in result = finished }
            outcome = result!
        } catch {
            if let lease = kept?.leaseName { await storeResults?.releaseLease(lease) }
            // After shutdown the workers' directory, and so the work store, is gone.
            let reason = isShutDown.load(ordering: .sequentiallyConsistent) ? Reason(code: .cancelled, message: "the pipeline was shut down")
                : Reason(code: .ioError, message: error.message)
            let failed = Self.builder(for: request, index: number, start: batch.start).failed(reason)
            return .init(result: SharedResult(descriptor: failed, files: [], publishedFiles: [], headers: .init(), lifetime: nil,
                                              store: nil), lifetime: nil, revalidated: false)
        }
        switch outcome {
        case .fromStore(let descriptor, let files, let headers, let lifetime, let revalidated):
            let result = SharedResult(descriptor: descriptor, files: files, publishedFiles: [], headers: headers,
                                      lifetime: lifetime, store: store, madeBy: span.context)
            PipelineSpans.record(descriptor, cache: "store", on: span)
            return .init(result: result, lifetime: lifetime, revalidated: revalidated, shared: !revalidated)
        case .notModified(let headers):
            guard let stale else { preconditionFailure("a 304 without a conditional request") }
            let lifetime = headers.speaksOfFreshness ? freshness(ready: true, reason: nil, headers: headers) : stale.lifetime
            return .init(result: stale, lifetime: lifetime, revalidated: true)
        case .made(let descriptor, let files, let unnamed, let sizes, let headers, let resumable):
            // A result the deadline cut short is this caller's only: kept, it would answer
            // callers with time to spare, for its whole freshness, without a thumbnail (an image
            // never decoded in full), a probe or a variant. The campaign's whole clip, itself cut
            // short by its own budget, is the longest there will be: kept.
            let lifetime = descriptor.skippedAtDeadline != nil && kept == nil ? nil
                : freshness(ready: descriptor.status == .ready, reason: descriptor.reason, headers: headers)
            let published = configuration.publish.map { publishing in
                ([descriptor.publishedUrl, descriptor.thumbnail?.publishedUrl] + (descriptor.variants ?? [:]).values.map(\.publishedUrl))
                    .compactMap { $0 }.map { "\(publishing.directory)/\(($0 as NSString).lastPathComponent)" }
            } ?? []
            let result = SharedResult(descriptor: descriptor, files: files, publishedFiles: published, headers: headers,
                                      lifetime: lifetime, store: store, unnamed: unnamed, sizes: sizes, madeBy: span.context)
            PipelineSpans.record(descriptor, cache: nil, on: span)
            var produced = SharedResults.Produced(result: result, lifetime: lifetime, revalidated: false)
            if let resumable, let budget = configuration.cache?.wholeClipBudget, budget > .zero {
                produced.completion = (budget, { work in
                    await self.produce(request, platforms: platforms, stale: nil, batch: work, logger: logger, resuming: resumable)
                })
            }
            return produced
        }
    }

    /// The sizes of a ready result's files as the work knows them: the delivered file's and the
    /// variants' from the descriptor, the thumbnail's from its writer.
    static func knownSizes(of ready: AttachmentDescriptor, thumbnail: ThumbnailOutcome?) -> [String: Int64] {
        var sizes: [String: Int64] = [:]
        if let file = ready.file, let bytes = ready.bytes { sizes[file] = bytes }
        if let file = ready.thumbnail?.file, let bytes = thumbnail?.bytes { sizes[file] = bytes }
        for variant in (ready.variants ?? [:]).values {
            if let file = variant.file, let bytes = variant.bytes { sizes[file] = bytes }
        }
        return sizes
    }

    /// How long a result may be reused: nil when caching is off or the result must not be kept.
    func freshness(ready: Bool, reason: Reason?, headers: CacheHeaders) -> Duration? {
        guard let caching = configuration.cache,
              let lifetime = HTTPFreshness.lifetime(of: headers, maximum: caching.maximumFreshness,
                                                    fallback: caching.defaultFreshness) else { return nil }
        if ready { return lifetime }
        guard let reason, ResultCaching.cachedFailures.contains(reason.code) else { return nil }
        // Our own limit ended it, not the media: tried again soon.
        return reason.endedByOwnLimit ? min(caching.failureFreshness, ResultCaching.ownLimitFreshness) : caching.failureFreshness
    }

    enum WorkOutcome: Sendable {
        /// The descriptor (its files: `files`, working paths of `unnamed` files or names in the
        /// store; their sizes where known) and the response's caching headers.
        /// `resumable`: the source kept for the whole clip, when a deadline cut its transcode short.
        case made(AttachmentDescriptor, files: [String], unnamed: [UnnamedFile] = [], sizes: [String: Int64] = [:], headers: CacheHeaders,
                  resumable: KeptSource? = nil)
        /// The origin confirmed the stale result (304).
        case notModified(CacheHeaders)
        /// A result of the shared store (files downloaded into the work store): another
        /// replica's, or one the origin confirmed with a 304 (`revalidated`).
        case fromStore(AttachmentDescriptor, files: [String], headers: CacheHeaders, lifetime: Duration?, revalidated: Bool)
    }

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
                        encryption: encrypts(request) ? configuration.mediaEncryption : nil,
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
        var descriptor = Self.builder(for: request, index: number, start: batch.start)
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

    func transferSpec(for request: AttachmentRequest, bodyPath: String, batch: Batch) -> TransferSpec {
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
    func moveIntoPlace(_ work: AttachmentWork, name: String, directory: String,
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
}
