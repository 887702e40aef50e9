import Foundation
import Logging
import Synchronization

/// Downloads, sniffs, checks and thumbnails push-notification media, within a deadline.
///
/// One instance is meant to be shared: every batch on it shares its transfer slots
/// (`maxConcurrentTransfers`) and thumbnail threads. It is safe to call `process` from many
/// tasks at once.
public final class AttachmentPipeline: Sendable {
    public let configuration: AttachFetchConfiguration
    private let engine: TransferEngine
    private let stages: RacedRunner
    private let trustStore: TrustStore?
    private let logger: Logger
    private let isShutDown = Atomic<Bool>(false)
    private static let releasedWithoutShutdown = Atomic<Bool>(false)

    /// A logger that discards everything: the library is silent unless given one.
    public static let silentLogger = Logger(label: "attach-fetch", factory: { _ in SwiftLogNoOpLogHandler() })

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
            probeWorkers: WorkerPool(threads: configuration.probeThreads, name: "af-probe", launch: launch, eager: false))
    }

    /// Stops the download thread, after failing whatever is still queued or running as
    /// `cancelled`. Call it once the pipeline is no longer needed; later batches fail at once.
    public func shutdown() async {
        guard !isShutDown.exchange(true, ordering: .sequentiallyConsistent) else { return }
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
        engine.shutdown()
    }

    /// Processes a batch and returns exactly one descriptor per request, in order, by the
    /// deadline (default `configuration.defaultDeadline`). Never throws: every problem,
    /// including a directory that cannot be made, becomes a descriptor.
    ///
    /// - Parameters:
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
        let batch: Batch
        do {
            let directory = try WorkingDirectory(parent: outputDirectory ?? configuration.temporaryDirectory,
                                                 isScratch: outputDirectory != nil)
            batch = Batch(start: start, deadline: start + budget, directory: directory,
                          finalDirectory: outputDirectory.map { URL(fileURLWithPath: $0).standardizedFileURL.path } ?? directory.path)
        } catch {
            let descriptors = requests.enumerated().map { index, request in
                DescriptorBuilder(identifier: request.identifier ?? "attachment-\(index)", url: request.url, start: start,
                                  role: request.role, options: request.options, payloadPath: request.payloadPath)
                    .failed(Reason(code: .ioError, message: error.message))
            }
            for (index, descriptor) in descriptors.enumerated() { onDescriptor?(index, descriptor) }
            return AttachmentBatch(attachments: descriptors, elapsed: .now - start, deadline: budget, directory: nil)
        }
        logger.debug("batch started", metadata: ["count": "\(requests.count)", "directory": "\(batch.directory.path)"])

        var results = [AttachmentDescriptor?](repeating: nil, count: requests.count)
        await withTaskGroup(of: (Int, AttachmentDescriptor)?.self) { group in
            group.addTask {
                // The deadline sentinel: when it fires, everything still running is cancelled.
                try? await Task.sleep(until: batch.deadline, clock: .continuous)
                if !Task.isCancelled { batch.fireDeadline() }
                return nil
            }
            for (index, request) in requests.enumerated() {
                group.addTask {
                    let descriptor = await self.processOne(index: index, request: request, batch: batch, logger: logger)
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
        batch.directory.endBatch()
        let descriptors = results.map { $0! }
        let kept = !batch.directory.isScratch && batch.directory.exists
        logger.debug("batch finished", metadata: ["elapsedMs": "\(start.millisecondsElapsed)"])
        return AttachmentBatch(attachments: descriptors, elapsed: .now - start, deadline: budget,
                               directory: batch.directory.isScratch ? batch.finalDirectory : (kept ? batch.directory.path : nil))
    }

    // MARK: One attachment

    /// One attachment's story: the URL checked, the body fetched, the stages run, the files
    /// moved into place. The ledger removes whatever is not delivered, wherever it stops.
    private func processOne(index: Int, request: AttachmentRequest, batch: Batch, logger: Logger) async -> AttachmentDescriptor {
        let identifier = request.identifier ?? "attachment-\(index)"
        var descriptor = DescriptorBuilder(identifier: identifier, url: request.url, start: batch.start, role: request.role,
                                           options: request.options, payloadPath: request.payloadPath)
        if let problem = URLCheck.problem(with: request.url)
            ?? configuration.proxy.flatMap({ _ in URLCheck.literalHostRefusal(request.url, policy: configuration.addressPolicy) }) {
            return descriptor.failed(problem)
        }

        let ledger = FileLedger(afterLateRemoval: batch.directory.lateFileRemoved)
        defer { ledger.close() }
        let bodyPath = batch.directory.bodyPath(index: index)
        ledger.own(bodyPath)
        let outcome = await engine.fetch(transferSpec(for: request, bodyPath: bodyPath, batch: batch))
        descriptor.record(outcome)
        if let reason = outcome.failure { return descriptor.failed(batch.settle(reason, queued: outcome.endedWhileQueued)) }
        guard let sniffed = outcome.sniffedMIME, let sha256 = outcome.sha256 else {
            return descriptor.failed(Reason(code: .ioError, message: "the transfer ended without a type"))
        }

        var work = AttachmentWork(
            descriptor: descriptor,
            source: .init(path: bodyPath, sniffedMIME: sniffed, bytes: outcome.bytes, sha256: sha256),
            plan: .init(shape: request.role == .avatar ? .squareCenter : .clip(request.clip ?? .whole),
                        thumbnailTime: request.options?.thumbnailTime, imagesOnly: request.role == .avatar,
                        convertedBase: batch.directory.convertedBase(index: index),
                        thumbnailBase: batch.directory.thumbnailBase(index: index)),
            ledger: ledger)
        if let reason = await stages.run(Stage.afterDownload, on: &work, batch: batch) { return work.descriptor.failed(reason) }
        return moveIntoPlace(work, name: FileNames.sanitize(identifier), directory: batch.finalDirectory, logger: logger)
    }

    private func transferSpec(for request: AttachmentRequest, bodyPath: String, batch: Batch) -> TransferSpec {
        var timeout = configuration.timeout
        if let shorter = request.timeout ?? (request.role == .avatar ? configuration.avatarTimeout : nil) {
            timeout.request = min(timeout.request, shorter)
        }
        return TransferSpec(batch: batch.id, url: request.url, bodyPath: bodyPath, deadline: batch.deadline, timeout: timeout,
                            sizeLimits: configuration.sizeLimits, maxRedirects: configuration.maxRedirects,
                            addressPolicy: configuration.addressPolicy, imagesOnly: request.role == .avatar,
                            normalize: configuration.normalize, trustStore: trustStore, proxy: configuration.proxy)
    }

    /// Moves the delivered file, and its thumbnail, to `directory` under the attachment's name.
    /// Never replaces a file; a thumbnail that cannot be moved is left out.
    private func moveIntoPlace(_ work: AttachmentWork, name: String, directory: String, logger: Logger) -> AttachmentDescriptor {
        let file = work.admitted
        let finalPath = "\(directory)/\(name).\(file.type.fileExtension)"
        if let problem = FileNames.moveNoReplace(file.path, to: finalPath) {
            return work.descriptor.failed(Reason(code: .ioError, message: problem))
        }
        work.ledger.deliver(file.path)
        guard let made = work.thumbnail else { return work.ready(file: finalPath, thumbnailFile: nil) }
        let thumbnailPath = "\(directory)/\(name).thumb.\((made.file as NSString).pathExtension)"
        if let problem = FileNames.moveNoReplace(made.file, to: thumbnailPath) {
            logger.debug("thumbnail not kept", metadata: ["problem": "\(problem)"])
            return work.ready(file: finalPath, thumbnailFile: nil)
        }
        work.ledger.deliver(made.file)
        return work.ready(file: finalPath, thumbnailFile: thumbnailPath)
    }
}
