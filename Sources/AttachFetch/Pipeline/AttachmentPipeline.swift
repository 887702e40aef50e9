import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// Downloads, sniffs, checks and thumbnails push-notification media, within a deadline.
///
/// One instance is meant to be shared: every batch on it shares its transfer slots
/// (`maxConcurrentTransfers`) and thumbnail threads. It is safe to call `process` from many
/// tasks at once.
public final class AttachmentPipeline: Sendable {
    /// The settings the pipeline was made with (validated).
    public let configuration: AttachFetchConfiguration
    private let engine: TransferEngine
    private let stages: RacedRunner
    private let trustStore: TrustStore?
    /// Where shared work makes its files, held only while in use.
    private let store: WorkStore
    /// Coalescing, and the cache when configured.
    private let results: SharedResults
    private let workNumbers = Atomic<Int>(0)
    private let logger: Logger
    private let isShutDown = Atomic<Bool>(false)
    private static let releasedWithoutShutdown = Atomic<Bool>(false)

    /// A logger that discards everything: the library is silent unless given one.
    public static let silentLogger = Logger(label: "attach-fetch", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Makes a pipeline: validates `configuration`, starts libvips, the download thread and the
    /// decoder workers. Throws ``AttachFetchError`` when a setting cannot work.
    public init(configuration: AttachFetchConfiguration = .init(),
                logger: Logger = AttachmentPipeline.silentLogger) throws(AttachFetchError) {
        try configuration.validate()
        try Vips.ensureStarted()
        self.configuration = configuration
        self.logger = logger
        self.trustStore = try TrustStore.adding(configuration.trustedCertificates)
        self.engine = try TransferEngine(maxConcurrent: configuration.maxConcurrentTransfers, logger: logger)
        let launch = try DecoderProcess.launch(for: configuration)
        // Image workers start with the pipeline (images are the common case); the probe worker
        // at the first audio or video, so that image-only use never starts one.
        self.stages = RacedRunner(
            configuration: configuration,
            imageWorkers: WorkerPool(threads: configuration.thumbnailThreads, name: "af-thumb", launch: launch, eager: true),
            probeWorkers: WorkerPool(threads: configuration.probeThreads, name: "af-probe", launch: launch, eager: false),
            // The file thread only publishes: none when nothing is published.
            fileWorkers: WorkerPool(threads: configuration.publish == nil ? 0 : 1, name: "af-files", launch: nil, eager: false))
        self.store = WorkStore(parent: configuration.temporaryDirectory)
        self.results = SharedResults(caching: configuration.cache)
    }

    /// Downloads now running (holding one of `maxConcurrentTransfers` slots) and waiting for a
    /// slot, across every batch of this pipeline. For metrics; a snapshot, stale at once.
    public var transfersInFlight: (running: Int, queued: Int) { engine.inFlight }

    /// Stops the download thread, after failing whatever is still queued or running as
    /// `cancelled`. Call it once the pipeline is no longer needed; later batches fail at once.
    public func shutdown() async {
        guard !isShutDown.exchange(true, ordering: .sequentiallyConsistent) else { return }
        results.removeAll()
        let engine = self.engine
        // The engine's shutdown waits for its thread: wait on a thread of its own, not on the
        // cooperative pool.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread { engine.shutdown(); done.resume() }.start()
        }
    }

    deinit {
        guard !isShutDown.load(ordering: .sequentiallyConsistent) else { return }
        #if DEBUG
        // Said once per process: enough to find the missing call.
        if !Self.releasedWithoutShutdown.exchange(true, ordering: .relaxed) {
            FileHandle.standardError.write(Data("attach-fetch: an AttachmentPipeline was released without shutdown(); it shuts down in deinit, blocking the releasing thread\n".utf8))
        }
        #endif
        results.removeAll()
        engine.shutdown()
    }

    /// Processes a batch and returns exactly one descriptor per request, in order, by the
    /// deadline (default `configuration.defaultDeadline`). Never throws: every problem,
    /// including a directory that cannot be made, becomes a descriptor.
    ///
    /// Requests for the same URL with the same options share one download and one processing,
    /// within the batch and with other batches running on this pipeline (and, with
    /// `configuration.cache`, with later ones while the result is fresh). Each still gets its
    /// own descriptor and its own files.
    ///
    /// - Parameters:
    ///   - requests: the URLs to fetch; one descriptor comes back for each, in this order.
    ///   - deadline: how long the batch may take from the call (default `configuration.defaultDeadline`).
    ///   - outputDirectory: where ready files go (must exist). Default: a new directory under
    ///     `configuration.temporaryDirectory`, reported in the result. Either way the caller
    ///     owns those files; nothing else is left behind.
    ///   - logger: for this batch's debug and trace messages (default: the pipeline's).
    ///   - onDescriptor: called as each attachment is finished (any order, any thread).
    public func process(_ requests: [AttachmentRequest], deadline: Duration? = nil,
                        outputDirectory: String? = nil, logger: Logger? = nil,
                        onDescriptor: (@Sendable (Int, AttachmentDescriptor) -> Void)? = nil) async -> AttachmentBatch {
        let logger = logger ?? self.logger
        let budget = deadline ?? configuration.defaultDeadline
        let start = ContinuousClock.now
        let batch = Batch(start: start, deadline: start + budget)
        let output: BatchOutput
        do {
            output = try BatchOutput(outputDirectory, temporaryDirectory: configuration.temporaryDirectory)
        } catch {
            let descriptors = requests.enumerated().map { index, request in
                Self.builder(for: request, index: index, start: start).failed(Reason(code: .ioError, message: error.message))
            }
            for (index, descriptor) in descriptors.enumerated() { onDescriptor?(index, descriptor) }
            return AttachmentBatch(attachments: descriptors, elapsed: .now - start, deadline: budget, directory: nil)
        }
        logger.debug("batch started", metadata: ["count": "\(requests.count)", "directory": "\(output.path)"])

        // A batch answered wholly from the cache needs no task group, no deadline sentinel and no
        // task per request: the hits are handed over here (creating and scheduling those tasks
        // was a large part of a cache hit's cost).
        if let hits = freshHits(requests) {
            let descriptors = hits.enumerated().map { index, hit in
                defer { hit.result.release() }
                let descriptor = handOver(hit.result.descriptor, status: .hit, to: requests[index], identifier: hit.identifier,
                                          batch: batch, directory: output.path)
                onDescriptor?(index, descriptor)
                return descriptor
            }
            logger.debug("batch finished", metadata: ["elapsedMs": "\(start.millisecondsElapsed)", "hits": "\(hits.count)"])
            return AttachmentBatch(attachments: descriptors, elapsed: .now - start, deadline: budget, directory: output.finish())
        }

        var results = [AttachmentDescriptor?](repeating: nil, count: requests.count)
        await withTaskGroup(of: (Int, AttachmentDescriptor)?.self) { group in
            group.addTask {
                // The deadline sentinel: when it fires, everything still running is cancelled.
                await batch.sleepThenFireDeadline()
                return nil
            }
            for (index, request) in requests.enumerated() {
                group.addTask {
                    let descriptor = await self.attachment(index: index, request: request, batch: batch,
                                                           directory: output.path, logger: logger)
                    onDescriptor?(index, descriptor)
                    return (index, descriptor)
                }
            }
            var remaining = requests.count
            if remaining == 0 { group.cancelAll() }
            while let finished = await group.next() {
                if let (index, descriptor) = finished {
                    results[index] = descriptor
                    remaining -= 1
                    if remaining == 0 { group.cancelAll() }
                } else {
                    group.cancelAll()
                }
            }
        }
        logger.debug("batch finished", metadata: ["elapsedMs": "\(start.millisecondsElapsed)"])
        return AttachmentBatch(attachments: results.map { $0! }, elapsed: .now - start, deadline: budget,
                               directory: output.finish())
    }

    /// The caller's identifier, or `attachment-<index>`.
    private static func identifier(of request: AttachmentRequest, index: Int) -> String {
        request.identifier ?? "attachment-\(index)"
    }

    private static func builder(for request: AttachmentRequest, index: Int, start: ContinuousClock.Instant) -> DescriptorBuilder {
        DescriptorBuilder(identifier: identifier(of: request, index: index), url: request.url, start: start,
                          role: request.role, options: request.options, payloadPath: request.payloadPath)
    }

    // MARK: One attachment, for one caller

    /// One caller's attachment: the URL checked, then the shared result for its URL and
    /// options (cached, coalesced, or made now), handed over as the caller's own descriptor and
    /// files in `directory`.
    private func attachment(index: Int, request: AttachmentRequest, batch: Batch, directory: String,
                            logger: Logger) async -> AttachmentDescriptor {
        let descriptor = Self.builder(for: request, index: index, start: batch.start)
        if let problem = urlProblem(request) { return descriptor.failed(problem) }
        let platforms = request.platforms ?? configuration.platforms
        let key = ResultKey(request, platforms: platforms)
        while true {
            let delivery = await results.result(
                for: key, deadline: batch.deadline, fairnessID: batch.id,
                // At its deadline a caller keeps waiting for work that ends by then anyway: its
                // answer names the step the deadline stopped.
                staysAtCancel: { workDeadline in batch.stopCause == .deadline && workDeadline <= batch.deadline },
                produce: { stale, work in
                    await self.produce(request, platforms: platforms, stale: stale, batch: work, logger: logger)
                })
            guard let (result, status) = delivery else { return descriptor.failed(batch.stopReason(queued: false)) }
            defer { result.release() }
            // Work shared with a caller whose deadline came first: try again with the time left.
            if status == .coalesced, result.descriptor.reason?.code == .deadlineExceeded,
               batch.deadline - .now > .milliseconds(5), !Task.isCancelled { continue }
            return handOver(result.descriptor, status: status, to: request, identifier: Self.identifier(of: request, index: index),
                            batch: batch, directory: directory)
        }
    }

    /// Why the request's URL is refused before anything is fetched, or nil.
    private func urlProblem(_ request: AttachmentRequest) -> Reason? {
        URLCheck.problem(with: request.url)
            ?? configuration.proxy.flatMap { _ in URLCheck.literalHostRefusal(request.url, policy: configuration.addressPolicy) }
    }

    /// Every request's fresh cached result (held: the caller releases each) with its
    /// identifier, or nil when one of them is not a fresh hit (nothing is then held).
    private func freshHits(_ requests: [AttachmentRequest]) -> [(result: SharedResult, identifier: String)]? {
        guard !requests.isEmpty else { return nil }
        var hits: [(result: SharedResult, identifier: String)] = []
        hits.reserveCapacity(requests.count)
        for (index, request) in requests.enumerated() {
            guard urlProblem(request) == nil,
                  let result = results.freshResult(for: ResultKey(request, platforms: request.platforms ?? configuration.platforms))
            else {
                for hit in hits { hit.result.release() }
                return nil
            }
            hits.append((result, Self.identifier(of: request, index: index)))
        }
        return hits
    }

    /// The shared descriptor as this caller's: its identifier, role, options and payload path,
    /// its total time, where it came from, and its own links to the files.
    private func handOver(_ shared: AttachmentDescriptor, status: AttachmentDescriptor.CacheStatus, to request: AttachmentRequest,
                          identifier: String, batch: Batch, directory: String) -> AttachmentDescriptor {
        var mine = shared
        mine.identifier = identifier
        mine.url = request.url
        mine.role = request.role
        mine.options = request.options
        mine.payloadPath = request.payloadPath
        mine.cache = status
        // Reused results took no time of this caller's beyond the total.
        if status == .hit || status == .revalidated { mine.timings = .init(total: 0) }
        mine.timings.total = batch.start.millisecondsElapsed
        guard mine.status == .ready, let file = shared.file else { return mine }

        let name = FileNames.sanitize(identifier)
        let mainPath = "\(directory)/\(name).\((file as NSString).pathExtension)"
        if let problem = FileNames.linkNoReplace(file, to: mainPath) {
            mine.status = .failed
            mine.reason = Reason(code: .ioError, message: problem)
            mine.file = nil
            mine.thumbnail = nil
            mine.variants = nil
            mine.publishedUrl = nil
            return mine
        }
        mine.file = mainPath
        if let thumbnail = shared.thumbnail {
            let path = "\(directory)/\(name).thumb.\((thumbnail.file as NSString).pathExtension)"
            // A thumbnail that cannot be linked is left out; the attachment is still ready.
            mine.thumbnail?.file = path
            if FileNames.linkNoReplace(thumbnail.file, to: path) != nil { mine.thumbnail = nil }
        }
        for (platform, variant) in shared.variants ?? [:] {
            guard let source = variant.file else { continue }
            let path = "\(directory)/\(name).\(platform).\((source as NSString).pathExtension)"
            if let problem = FileNames.linkNoReplace(source, to: path) {
                mine.variants?[platform] = .init(status: .failed, reason: Reason(code: .ioError, message: problem))
            } else {
                mine.variants?[platform]?.file = path
            }
        }
        return mine
    }

    // MARK: Shared work

    /// Makes the result for one URL and its options, once for everyone waiting: fetched
    /// (conditionally when `stale` may still be good), the stages run, the files moved into
    /// the work store. It runs under `batch`: the deadline of the caller that started it,
    /// moved later when a caller with more time joins.
    private func produce(_ request: AttachmentRequest, platforms: Set<Platform>, stale: SharedResult?,
                         batch: Batch, logger: Logger) async -> SharedResults.Produced {
        let number = workNumbers.add(1, ordering: .relaxed).newValue
        let outcome: WorkOutcome
        do {
            let directory = try store.acquire()
            defer { store.release() }
            outcome = await withTaskGroup(of: WorkOutcome?.self) { group in
                group.addTask {
                    await batch.sleepThenFireDeadline()
                    return nil
                }
                group.addTask {
                    await self.work(request, platforms: platforms, number: number, directory: directory,
                                    validators: stale?.headers.validators, batch: batch, logger: logger)
                }
                var result: WorkOutcome?
                while let finished = await group.next() {
                    group.cancelAll()
                    if let finished { result = finished }
                }
                return result!
            }
        } catch {
            let failed = Self.builder(for: request, index: number, start: batch.start).failed(Reason(code: .ioError, message: error.message))
            return .init(result: SharedResult(descriptor: failed, files: [], publishedFiles: [], headers: .init(), lifetime: nil,
                                              store: nil), lifetime: nil, revalidated: false)
        }
        switch outcome {
        case .notModified(let headers):
            guard let stale else { preconditionFailure("a 304 without a conditional request") }
            let lifetime = headers.speaksOfFreshness ? freshness(ready: true, code: nil, headers: headers) : stale.lifetime
            return .init(result: stale, lifetime: lifetime, revalidated: true)
        case .made(let descriptor, let files, let headers):
            // A result the deadline cut short is this caller's only: kept, it would answer
            // callers with time to spare, for its whole freshness, without a thumbnail (an image
            // never decoded in full), a probe or a variant.
            let lifetime = descriptor.skippedAtDeadline != nil ? nil
                : freshness(ready: descriptor.status == .ready, code: descriptor.reason?.code, headers: headers)
            let published = configuration.publish.map { publishing in
                ([descriptor.publishedUrl, descriptor.thumbnail?.publishedUrl] + (descriptor.variants ?? [:]).values.map(\.publishedUrl))
                    .compactMap { $0 }.map { "\(publishing.directory)/\(($0 as NSString).lastPathComponent)" }
            } ?? []
            let result = SharedResult(descriptor: descriptor, files: files, publishedFiles: published, headers: headers,
                                      lifetime: lifetime, store: store)
            return .init(result: result, lifetime: lifetime, revalidated: false)
        }
    }

    /// How long a result may be reused: nil when caching is off or the result must not be kept.
    private func freshness(ready: Bool, code: ReasonCode?, headers: CacheHeaders) -> Duration? {
        guard let caching = configuration.cache,
              let lifetime = HTTPFreshness.lifetime(of: headers, maximum: caching.maximumFreshness,
                                                    fallback: caching.defaultFreshness) else { return nil }
        if ready { return lifetime }
        guard let code, ResultCaching.cachedFailures.contains(code) else { return nil }
        return caching.failureFreshness
    }

    private enum WorkOutcome: Sendable {
        /// The descriptor (files in the store: `files`) and the response's caching headers.
        case made(AttachmentDescriptor, files: [String], headers: CacheHeaders)
        /// The origin confirmed the stale result (304).
        case notModified(CacheHeaders)
    }

    /// The work itself: the body fetched into the store, the stages run, the files moved to
    /// their result names. The ledger removes whatever is not delivered, wherever it stops.
    private func work(_ request: AttachmentRequest, platforms: Set<Platform>, number: Int, directory: String,
                      validators: CacheValidators?, batch: Batch, logger: Logger) async -> WorkOutcome {
        var descriptor = Self.builder(for: request, index: number, start: batch.start)
        let ledger = FileLedger(afterLateRemoval: store.tidy)
        defer { ledger.close() }
        let bodyPath = "\(directory)/.part-\(number)"
        ledger.own(bodyPath)
        var spec = transferSpec(for: request, bodyPath: bodyPath, batch: batch)
        spec.validators = validators
        let outcome = await engine.fetch(spec)
        if outcome.notModified { return .notModified(outcome.cacheHeaders) }
        descriptor.record(outcome)
        func failed(_ reason: Reason) -> WorkOutcome { .made(descriptor.failed(reason), files: [], headers: outcome.cacheHeaders) }
        if let reason = outcome.failure { return failed(batch.settle(reason, queued: outcome.endedWhileQueued)) }
        guard let sniffed = outcome.sniffedMIME, let sha256 = outcome.sha256 else {
            return failed(Reason(code: .ioError, message: "the transfer ended without a type"))
        }

        var work = AttachmentWork(
            descriptor: descriptor,
            source: .init(path: bodyPath, sniffedMIME: sniffed, bytes: outcome.bytes, sha256: sha256),
            plan: .init(shape: request.role == .avatar ? .squareCenter : .clip(request.clip ?? .whole),
                        thumbnailTime: request.options?.thumbnailTime, imagesOnly: request.role == .avatar,
                        convertedBase: "\(directory)/.norm-\(number)", thumbnailBase: "\(directory)/.thumb-\(number)",
                        variantBase: "\(directory)/.variant-\(number)", platforms: platforms),
            ledger: ledger)
        if let reason = await stages.run(Stage.afterDownload, on: &work, batch: batch) {
            return .made(work.descriptor.failed(reason), files: [], headers: outcome.cacheHeaders)
        }
        let (ready, files) = moveIntoPlace(work, name: "r\(number)", directory: directory, logger: logger)
        return .made(ready, files: files, headers: outcome.cacheHeaders)
    }

    private func transferSpec(for request: AttachmentRequest, bodyPath: String, batch: Batch) -> TransferSpec {
        var timeout = configuration.timeout
        if let shorter = request.timeout ?? (request.role == .avatar ? configuration.avatarTimeout : nil) {
            timeout.request = min(timeout.request, shorter)
        }
        return TransferSpec(batch: batch.id, url: request.url, bodyPath: bodyPath, runningUnder: batch, timeout: timeout,
                            sizeLimits: configuration.sizeLimits, maxRedirects: configuration.maxRedirects,
                            addressPolicy: configuration.addressPolicy, imagesOnly: request.role == .avatar,
                            normalize: configuration.normalize, trustStore: trustStore, proxy: configuration.proxy)
    }

    /// Moves the delivered file, its thumbnail and its variants to their result names in
    /// `directory`. Never replaces a file; a thumbnail or variant that cannot be moved is left out.
    private func moveIntoPlace(_ work: AttachmentWork, name: String, directory: String,
                               logger: Logger) -> (AttachmentDescriptor, files: [String]) {
        let file = work.admitted
        let finalPath = "\(directory)/\(name).\(file.type.fileExtension)"
        if let problem = FileNames.moveNoReplace(file.path, to: finalPath) {
            return (work.descriptor.failed(Reason(code: .ioError, message: problem)), [])
        }
        work.ledger.deliver(file.path)
        var files = [finalPath]
        var thumbnailPath: String?
        if let made = work.thumbnail {
            let path = "\(directory)/\(name).thumb.\((made.file as NSString).pathExtension)"
            if let problem = FileNames.moveNoReplace(made.file, to: path) {
                logger.debug("thumbnail not kept", metadata: ["problem": "\(problem)"])
            } else {
                work.ledger.deliver(made.file)
                thumbnailPath = path
                files.append(path)
            }
        }
        var variantPaths: [Platform: String] = [:]
        for (platform, source) in work.variantFiles {
            let path = "\(directory)/\(name).\(platform.rawValue).\((source as NSString).pathExtension)"
            if FileNames.moveNoReplace(source, to: path) == nil {
                work.ledger.deliver(source)
                variantPaths[platform] = path
                files.append(path)
            }
        }
        return (work.ready(file: finalPath, thumbnailFile: thumbnailPath, variantFiles: variantPaths), files)
    }
}

/// Where one batch's ready files go: the caller's directory, or a new one (mode 0700) in the
/// temporary directory, removed at the end when nothing was kept in it.
struct BatchOutput {
    let path: String
    /// True when the directory was made for this batch.
    let isOwn: Bool

    init(_ outputDirectory: String?, temporaryDirectory: String) throws(AttachFetchError) {
        if let outputDirectory {
            let standardized = Self.isStandard(outputDirectory) ? outputDirectory
                : URL(fileURLWithPath: outputDirectory).standardizedFileURL.path
            var status = stat()
            guard stat(standardized, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR, access(standardized, W_OK | X_OK) == 0 else {
                throw .outputDirectory("the output directory \(outputDirectory) does not exist or is not a writable directory")
            }
            path = standardized
            isOwn = false
        } else {
            path = try PrivateDirectory.create(in: temporaryDirectory, prefix: "attach-fetch-")
            isOwn = true
        }
    }

    /// An absolute path that standardizing would leave as it is: no empty, `.` or `..`
    /// component, no trailing slash, and not under `/private` (which Foundation drops, on Linux
    /// too). Why: the service passes a directory it has just made on every call, and Foundation's
    /// standardizing was about 1 % of its CPU under a load of cache hits.
    static func isStandard(_ path: String) -> Bool {
        guard path.hasPrefix("/"), path.count > 1, !path.hasSuffix("/"), !path.hasPrefix("/private") else { return false }
        return !path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst().contains { component in
            component.isEmpty || component.elementsEqual(".".utf8) || component.elementsEqual("..".utf8)
        }
    }

    /// The directory to report: the caller's, or ours when it holds files (else it is removed).
    func finish() -> String? {
        guard isOwn else { return path }
        return rmdir(path) == 0 ? nil : path
    }
}
