import AttachFetchRuntime
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
internal import Tracing
import Synchronization

/// Downloads, sniffs, checks and thumbnails push-notification media, within a deadline.
///
/// One instance is meant to be shared: every batch on it shares its transfer slots
/// (`maxConcurrentTransfers`) and thumbnail threads. It is safe to call `process` from many
/// tasks at once.
public final class AttachmentPipeline: Sendable {
    /// The settings the pipeline was made with (validated).
    public let configuration: AttachFetchConfiguration
    let engine: TransferEngine
    let stages: RacedRunner
    let trustStore: TrustStore?
    /// Where shared work makes its files, held only while in use.
    let store: WorkStore
    /// Makes each URL's result in `store`; this type decides who shares it.
    let maker: ResultMaker
    /// The workers' one writable directory (Landlock), holding the work store: made for this
    /// pipeline (mode 0700) and removed at shutdown, so that no worker can write the system
    /// temporary directory, where the CLI's output and the service's served files are. Nil
    /// when decoders run in this process.
    let workerRoot: String?
    /// How this pipeline's decoders are confined, as its keeper requires of each worker.
    public let decoderConfinement: DecoderConfinement
    /// Coalescing, and the cache when configured.
    let results: SharedResults
    /// The object store published to, when one is configured.
    let objectStore: ObjectStore?
    /// The store as the result cache replicas share (with `cache` on).
    let storeResults: StoreResults?
    let workNumbers = Atomic<Int>(0)
    /// Attachments in flight across batches: four batches' windows.
    let permits: AttachmentPermits
    let logger: Logger
    let isShutDown = Atomic<Bool>(false)
    private static let releasedWithoutShutdown = Atomic<Bool>(false)

    /// A logger that discards everything: the library is silent unless given one.
    public static let silentLogger = Logger(label: "attach-fetch", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Makes a pipeline: validates `configuration`, starts libvips, the download thread and the
    /// decoder workers. Throws ``/AttachFetchCore/AttachFetchError`` when a setting cannot work.
    public init(configuration: AttachFetchConfiguration = .init(),
                logger: Logger = AttachmentPipeline.silentLogger) throws(AttachFetchError) {
        try configuration.validate()
        try Vips.ensureStarted()
        self.configuration = configuration
        self.logger = logger
        self.trustStore = try TrustStore.adding(configuration.trustedCertificates)
        // Image workers start with the pipeline unless told otherwise (images are the common
        // case); the probe worker at the first audio or video, so that image-only use never
        // starts one.
        let workerRoot = configuration.isolation == .processes
            ? try PrivateDirectory.create(in: configuration.temporaryDirectory, prefix: ".attach-fetch-workers-") : nil
        self.workerRoot = workerRoot
        // Removed again when a later step of the start throws.
        var started = false
        defer { if !started, let workerRoot { try? FileManager.default.removeItem(atPath: workerRoot) } }
        let launch = try DecoderProcess.launch(for: configuration, workDirectory: workerRoot)
        decoderConfinement = DecoderConfinement(launch)
        let imageWorkers = DecoderPool(threads: configuration.thumbnailThreads, name: "af-thumb", launch: launch,
                                       eager: configuration.imageWorkersStartWithPipeline, runHere: WorkerThread.inThisProcess)
        var videoLaunch = launch
        videoLaunch?.memoryBytes = configuration.videoDecoderMemoryLimit
        let probeWorkers = DecoderPool(threads: configuration.probeThreads, name: "af-probe", launch: videoLaunch, eager: false,
                                       runHere: WorkerThread.inThisProcess)
        var backgroundLaunch = videoLaunch
        backgroundLaunch?.takesReserved = false
        backgroundLaunch?.niceness = 10
        let backgroundWorkers = DecoderPool(threads: 1, name: "af-whole", launch: backgroundLaunch, eager: false,
                                            runHere: WorkerThread.inThisProcess)
        self.engine = try TransferEngine(maxConcurrent: configuration.maxConcurrentTransfers,
                                         adaptive: configuration.transferConcurrency == .adaptive,
                                         decoderThreads: configuration.thumbnailThreads + configuration.probeThreads,
                                         decodeRate: {
                                             // Images and probes run on pools of their own, side by side.
                                             switch (imageWorkers.jobsPerSecond, probeWorkers.jobsPerSecond) {
                                             case (nil, nil): nil
                                             case let (images, probes): (images ?? 0) + (probes ?? 0)
                                             }
                                         },
                                         maxPerHost: configuration.maxHostConnections,
                                         maxInflightBytes: configuration.maxInflightBytes,
                                         breaker: (configuration.breaker.failures, configuration.breaker.cooldown), clock: configuration.clock, logger: logger)
        let objectStore = try configuration.objectStore.map { target throws(AttachFetchError) in
            // Requests to one store: as many as one host's downloads.
            try ObjectStore(target: target, maxConcurrent: max(8, configuration.maxHostConnections), clock: configuration.clock, logger: logger)
        }
        self.objectStore = objectStore
        self.storeResults = configuration.cache == nil ? nil
            : objectStore.map { StoreResults(store: $0, configuration: configuration, logger: logger) }
        let fileWorkers = BlockingPool(threads: configuration.publish == nil && objectStore == nil ? 0 : 1, name: "af-files")
        self.stages = RacedRunner(
            configuration: configuration,
            imageWorkers: imageWorkers,
            probeWorkers: probeWorkers,
            backgroundWorkers: backgroundWorkers,
            // The file thread only publishes: none when nothing is published.
            fileWorkers: fileWorkers,
            objectPublisher: objectStore.map { ObjectPublisher(store: $0, fileWorkers: fileWorkers) })
        self.store = WorkStore(parent: workerRoot ?? configuration.temporaryDirectory)
        self.maker = ResultMaker(configuration: configuration, engine: engine, stages: stages, store: store, trustStore: trustStore)
        self.results = SharedResults(caching: configuration.cache, clock: configuration.clock)
        let perBatch = configuration.transferConcurrency == .fixed
            ? max(configuration.maxAttachmentsInFlight, configuration.maxConcurrentTransfers) : configuration.maxAttachmentsInFlight
        // Four batches' worth across batches (1,024 at the default): a campaign's thousand
        // concurrent calls for one URL all wait on its one shared work, never a second fetch.
        let (allBatches, overflow) = perBatch.multipliedReportingOverflow(by: 4)
        self.permits = AttachmentPermits(count: overflow ? Int.max : allBatches)
        started = true
    }

    /// Downloads now running (holding one of `maxConcurrentTransfers` slots) and waiting for a
    /// slot, across every batch of this pipeline. For metrics; a snapshot, stale at once.
    public var transfersInFlight: (running: Int, queued: Int) { engine.inFlight }

    /// Downloads a second allowed to start now: twice the pace the decoders get through jobs
    /// (`transferConcurrency` `.adaptive`); nil when the limit is fixed. For metrics.
    public var transferPace: Int? { engine.transferPace }

    /// Connections opened to origins since the pipeline started, and transfers that reused a
    /// kept-alive connection instead; and the most bytes running transfers ever held in
    /// temporary files at once (bounded by `maxInflightBytes`). For metrics and tests.
    public var originConnections: (opened: Int, reused: Int, peakInflightBytes: Int64) { engine.connections }

    /// Circuit-breaker transitions since the pipeline started, by the state entered (`open`,
    /// `half_open`, `closed`), and the hosts whose breaker is open or half-open now. For metrics.
    public var originBreakers: (transitions: [String: Int], openHosts: Int) { engine.breakers }

    /// Decode jobs taken so far by the image workers (conversions, thumbnails, variants) and by
    /// the probe workers (`WorkerPool.jobsStarted`). For tests that act while a decode runs.
    var decodesStarted: (images: Int, probes: Int) { (stages.imageWorkers.jobsStarted, stages.probeWorkers.jobsStarted) }

    /// Probe and transcode jobs taken so far for campaigns' whole clips (`ResultCaching.wholeClipBudget`).
    var wholeClipDecodesStarted: Int { stages.backgroundWorkers.jobsStarted }

    /// Requests sent to the object store so far, by HTTP method (retries included); empty
    /// without one. For metrics.
    public var objectStoreRequests: [String: Int] { objectStore?.requestCounts ?? [:] }

    /// Stops the download thread, after failing whatever is still queued or running as
    /// `cancelled`, then the decoder workers, once the decodes already queued are done: when it
    /// returns no worker process of the pipeline is left, not even unreaped. Call it once the
    /// pipeline is no longer needed; later batches fail at once.
    public func shutdown() async {
        guard !isShutDown.exchange(true, ordering: .sequentiallyConsistent) else { return }
        // Cancelled work ends at once (its transfers stop) and gives back its object-store lease
        // while the store's requests still run; 3 s at most (a release's own deadline is 2 s).
        let cancelled = results.removeAll()
        if !cancelled.isEmpty {
            // Not a task group: awaiting a task's value does not stop at cancellation, so the
            // bound must be able to leave the awaiting behind.
            let resumed = Locked(false)
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                @Sendable func finish() {
                    if resumed.withLock({ let first = !$0; $0 = true; return first }) { done.resume() }
                }
                let bound = Task { try? await Task.sleep(for: .seconds(3)); finish() }
                Task {
                    for work in cancelled { await work.value }
                    bound.cancel()
                    finish()
                }
            }
        }
        let engine = self.engine, stages = self.stages
        // The shutdowns wait for their threads and processes: not on the cooperative pool.
        let objectStore = self.objectStore
        let workerRoot = self.workerRoot
        await BlockingWork.run {
            engine.shutdown()
            objectStore?.shutdown()
            stages.stopWorkers()
            // No worker is left to write in it.
            workerRoot.map { try? FileManager.default.removeItem(atPath: $0) }
        }
    }

    /// Checks once that the object store can be used: the bucket exists and the credentials
    /// are accepted (`HEAD` bucket). Throws ``/AttachFetchCore/AttachFetchError`` with the store's own words
    /// (`SignatureDoesNotMatch`, `NoSuchBucket`, the connection's failure), never a credential.
    /// Does nothing when no object store is configured.
    public func checkObjectStore(timeout: Duration = .seconds(10)) async throws(AttachFetchError) {
        guard let objectStore else { return }
        do throws(ObjectStoreError) {
            try await objectStore.checkBucket(deadline: objectStore.clock.now + timeout)
        } catch {
            throw .objectStore("s3://\(objectStore.target.bucket): \(error.description)")
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
        objectStore?.shutdown()
        workerRoot.map { try? FileManager.default.removeItem(atPath: $0) }
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
    ///   - keepingFiles: false to give the caller no files at all: no directory is made or
    ///     written to (`outputDirectory` is not used), and ready descriptors carry no local
    ///     paths (`file` and the variants' `file` are nil, the thumbnail's `file` is empty; the
    ///     JSON leaves them out). Everything else is as usual: the verdict, sizes, hashes,
    ///     dimensions and the published URLs. For callers that hand devices the published URLs,
    ///     or want only the verdict; a cache hit then makes no system call for files.
    ///   - logger: for this batch's debug and trace messages (default: the pipeline's).
    ///   - onDescriptor: called as each attachment is finished (any order, any thread).
    public func process(_ requests: [AttachmentRequest], deadline: Duration? = nil,
                        outputDirectory: String? = nil, keepingFiles: Bool = true, logger: Logger? = nil,
                        onDescriptor: (@Sendable (Int, AttachmentDescriptor) -> Void)? = nil) async -> AttachmentBatch {
        let logger = logger ?? self.logger
        let budget = deadline ?? configuration.defaultDeadline
        let start = ContinuousClock.now
        let batch = Batch(start: start, deadline: configuration.clock.now + budget, clock: configuration.clock)
        let output: BatchOutput?
        do {
            output = keepingFiles ? try BatchOutput(outputDirectory, temporaryDirectory: configuration.temporaryDirectory) : nil
        } catch {
            let descriptors = requests.enumerated().map { index, request in
                Self.builder(for: request, index: index, start: start).failed(Reason(code: .ioError, message: error.message))
            }
            for (index, descriptor) in descriptors.enumerated() { onDescriptor?(index, descriptor) }
            return AttachmentBatch(attachments: descriptors, elapsed: .now - start, deadline: budget, directory: nil)
        }
        logger.debug("batch started", metadata: ["count": "\(requests.count)", "directory": "\(output?.path ?? "none")"])

        // A batch answered wholly from the cache needs no task group, no deadline sentinel and no
        // task per request: the hits are handed over here (creating and scheduling those tasks
        // was a large part of a cache hit's cost).
        if let hits = freshHits(requests) {
            let descriptors = hits.enumerated().map { index, hit in
                defer { hit.result.release() }
                let descriptor = handOver(hit.result.descriptor, status: .hit, to: requests[index], identifier: hit.identifier,
                                          batch: batch, directory: output?.path)
                onDescriptor?(index, descriptor)
                return descriptor
            }
            logger.debug("batch finished", metadata: ["elapsedMs": "\(start.millisecondsElapsed)", "hits": "\(hits.count)"])
            return AttachmentBatch(attachments: descriptors, elapsed: .now - start, deadline: budget, directory: output?.finish())
        }

        var results = [AttachmentDescriptor?](repeating: nil, count: requests.count)
        // The race pulls one request at a time: the next position is all it needs.
        let position = Atomic<Int>(0)
        await runItems(batch, next: {
            let index = position.add(1, ordering: .relaxed).oldValue
            return index < requests.count ? requests[index] : nil
        }, directory: output?.path, logger: logger, finished: onDescriptor) { index, descriptor in results[index] = descriptor }
        logger.debug("batch finished", metadata: ["elapsedMs": "\(start.millisecondsElapsed)"])
        return AttachmentBatch(attachments: results.map { $0! }, elapsed: .now - start, deadline: budget,
                               directory: output?.finish())
    }

    /// The caller's identifier, or `attachment-<index>`.
    static func identifier(of request: AttachmentRequest, index: Int) -> String {
        request.identifier ?? "attachment-\(index)"
    }

    static func builder(for request: AttachmentRequest, index: Int, start: ContinuousClock.Instant) -> DescriptorBuilder {
        DescriptorBuilder(identifier: identifier(of: request, index: index), url: request.url, start: start,
                          role: request.role, options: request.options, payloadPath: request.payloadPath)
    }
}
