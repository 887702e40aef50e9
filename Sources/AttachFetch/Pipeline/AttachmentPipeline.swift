import Foundation
import Glibc
import Logging
import Synchronization

/// The result of one batch.
public struct AttachmentBatch: Sendable {
    /// One descriptor per request, in request order.
    public var attachments: [AttachmentDescriptor]
    /// Time from the call to its return.
    public var elapsed: Duration
    /// The deadline the batch ran under.
    public var deadline: Duration
    /// Where ready files were kept, or nil when none were kept.
    public var directory: String?
}

/// Downloads, sniffs, checks and thumbnails push-notification media, within a deadline.
///
/// One instance is meant to be shared: every batch on it shares its transfer slots
/// (`maxConcurrentTransfers`) and thumbnail threads. It is safe to call `process` from many
/// tasks at once.
public final class AttachmentPipeline: Sendable {
    public let configuration: AttachFetchConfiguration
    private let engine: TransferEngine
    private let thumbnailPool: WorkerPool
    private let probePool: WorkerPool
    private let logger: Logger

    /// A logger that discards everything: the library is silent unless given one.
    public static let silentLogger = Logger(label: "attach-fetch", factory: { _ in SwiftLogNoOpLogHandler() })

    public init(configuration: AttachFetchConfiguration = .init(),
                logger: Logger = AttachmentPipeline.silentLogger) throws(AttachFetchError) {
        try configuration.validate()
        try Vips.ensureStarted()
        self.configuration = configuration
        self.logger = logger
        self.engine = try TransferEngine(maxConcurrent: configuration.maxConcurrentTransfers, logger: logger)
        let launch = try DecoderProcess.launch(for: configuration)
        // Image workers start with the pipeline (images are the common case); the probe worker
        // at the first audio or video, so that image-only use never starts one.
        self.thumbnailPool = WorkerPool(threads: configuration.thumbnailThreads, name: "af-thumb", launch: launch, eager: true)
        self.probePool = WorkerPool(threads: configuration.probeThreads, name: "af-probe", launch: launch, eager: false)
    }

    deinit { engine.shutdown() }

    /// Processes a batch and returns exactly one descriptor per request, in order, by the
    /// deadline (default `configuration.defaultDeadline`). Never throws: every problem,
    /// including a directory that cannot be made, becomes a descriptor.
    ///
    /// - Parameters:
    ///   - outputDirectory: where ready files go (must exist). Default: a new directory under
    ///     `configuration.temporaryDirectory`, reported in the result. Either way the caller
    ///     owns those files; nothing else is left behind.
    ///   - onDescriptor: called as each attachment is finished (any order, any thread).
    public func process(_ requests: [AttachmentRequest], deadline: Duration? = nil,
                        outputDirectory: String? = nil,
                        onDescriptor: (@Sendable (Int, AttachmentDescriptor) -> Void)? = nil) async -> AttachmentBatch {
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
                AttachmentDescriptor.failure(identifier: request.identifier ?? "attachment-\(index)", url: request.url,
                                             code: .ioError, message: error.message, totalMilliseconds: start.millisecondsElapsed)
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
                if !Task.isCancelled { batch.deadlineFired.store(true, ordering: .sequentiallyConsistent) }
                return nil
            }
            for (index, request) in requests.enumerated() {
                group.addTask {
                    var descriptor = await self.processOne(index: index, request: request, batch: batch)
                    descriptor.role = request.role
                    descriptor.options = request.options
                    descriptor.payloadPath = request.payloadPath
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

    private func processOne(index: Int, request: AttachmentRequest, batch: Batch) async -> AttachmentDescriptor {
        let identifier = request.identifier ?? "attachment-\(index)"
        func failure(_ reason: AttachmentDescriptor.Reason, queued: Bool = false) -> AttachmentDescriptor {
            var reason = reason
            // The batch cancels its tasks when the deadline fires: that is a deadline, not a cancellation.
            if reason.code == .cancelled && batch.deadlineFired.load(ordering: .sequentiallyConsistent) {
                reason = .init(code: .deadlineExceeded, message: queued
                    ? "the batch deadline passed while the request was queued"
                    : "the batch deadline passed before this attachment was finished")
            }
            return .failure(identifier: identifier, url: request.url, code: reason.code, message: reason.message,
                            totalMilliseconds: batch.start.millisecondsElapsed)
        }
        if let problem = URLCheck.problem(with: request.url) { return failure(problem) }

        let bodyPath = batch.directory.bodyPath(index: index)
        var timeout = configuration.timeout
        if let shorter = request.timeout ?? (request.role == .avatar ? configuration.avatarTimeout : nil) {
            timeout.request = min(timeout.request, shorter)
        }
        let outcome = await engine.fetch(TransferSpec(
            batch: batch.id, url: request.url, bodyPath: bodyPath, deadline: batch.deadline, timeout: timeout,
            sizeLimits: configuration.sizeLimits, maxRedirects: configuration.maxRedirects,
            addressPolicy: configuration.addressPolicy, imagesOnly: request.role == .avatar,
            normalize: configuration.normalize))
        var descriptor = AttachmentDescriptor(identifier: identifier, url: request.url, status: .ready,
                                              timings: .init(total: 0))
        descriptor.finalUrl = outcome.finalURL
        descriptor.declaredMimeType = outcome.declaredMIME
        descriptor.timings.connect = outcome.connectMilliseconds
        descriptor.timings.firstByte = outcome.firstByteMilliseconds
        descriptor.timings.download = outcome.downloadMilliseconds
        // Known even on failure: what the bytes were (the table's name, or libmagic's).
        descriptor.mimeType = outcome.mediaType?.mimeType ?? outcome.sniffedMIME
        descriptor.kind = outcome.mediaType?.kind
        func failed(_ code: ReasonCode, _ message: String) -> AttachmentDescriptor {
            var result = failure(.init(code: code, message: message), queued: outcome.endedWhileQueued)
            result.finalUrl = descriptor.finalUrl
            result.declaredMimeType = descriptor.declaredMimeType
            result.mimeType = descriptor.mimeType
            result.kind = descriptor.kind
            result.timings = descriptor.timings
            result.timings.total = batch.start.millisecondsElapsed
            return result
        }
        if let reason = outcome.failure { return failed(reason.code, reason.message) }
        guard let type = outcome.mediaType else { return failed(.ioError, "the transfer ended without a type") }
        descriptor.sha256 = outcome.sha256
        descriptor.recordSource(type, bytes: outcome.bytes)
        let baseName = FileNames.sanitise(identifier)
        var delivered = (path: bodyPath, type: type)
        var thumbnailWork: ThumbnailOutcome?
        /// Work abandoned at the deadline degrades (no thumbnail, no probe); on cancellation it fails.
        func abandoned(_ files: [String]) -> AttachmentDescriptor? {
            guard batch.deadlineFired.load(ordering: .sequentiallyConsistent) else {
                files.forEach { _ = unlink($0) }
                return failed(.cancelled, "the request was cancelled")
            }
            return nil
        }

        switch type.kind {
        case .image:
            if MediaPolicy.needsConversion(type, bytes: outcome.bytes, limits: configuration.sizeLimits) {
                // Not deliverable as it is: convert and fit it, or fail. This cannot degrade.
                let started = ContinuousClock.now
                let limits = ImageNormalizer.Limits(configuration)
                let base = batch.directory.normalizedBase(index: index)
                let result = await decode(.normalize(source: bodyPath, type: type, destinationBase: base, limits: limits),
                                          batch: batch, pool: thumbnailPool)?.result(\.normalized)
                unlink(bodyPath)
                switch result {
                case .some(.success(let image)):
                    delivered = (image.file, image.type)
                    descriptor.record(image)
                    descriptor.timings.normalize = started.millisecondsElapsed
                case .some(.failure(let problem)):
                    return failed(problem.code, problem.message)
                case .none:
                    if let cancelled = abandoned([]) { return cancelled }
                    return failed(.deadlineExceeded, "the batch deadline passed while the image was being converted to fit")
                }
            }
            let started = ContinuousClock.now
            let shape: Thumbnailer.Shape = request.role == .avatar ? .squareCentre : .clip(request.clip ?? .whole)
            let source = delivered.path
            let destination = batch.directory.thumbnailBase(index: index)
            let limits = Thumbnailer.Limits(configuration)
            let result = await decode(.thumbnail(source: source, destinationBase: destination, shape: shape, limits: limits),
                                      batch: batch, pool: thumbnailPool)?.result(\.thumbnail)
            switch result {
            case .some(.success(let made)):
                thumbnailWork = made
                descriptor.record(thumbnailOf: made)
                descriptor.timings.thumbnail = started.millisecondsElapsed
            case .some(.failure(let problem)):
                unlink(delivered.path)
                return failed(problem.code, problem.message)
            case .none:
                // At the deadline the attachment is still good: it degrades to "no thumbnail"
                // rather than missing the deadline.
                if let cancelled = abandoned([delivered.path]) { return cancelled }
            }

        case .audio, .video:
            if MediaPolicy.needsRemux(type) {
                // QuickTime or 3GPP: copied into MPEG-4, or refused. This cannot degrade.
                let started = ContinuousClock.now
                let result = await decode(.remux(source: bodyPath, destinationBase: batch.directory.normalizedBase(index: index)),
                                          batch: batch, pool: probePool)?.result(\.remuxed)
                unlink(bodyPath)
                switch result {
                case .some(.success(let video)):
                    delivered = (video.file, .mp4)
                    descriptor.record(video)
                    descriptor.timings.normalize = started.millisecondsElapsed
                case .some(.failure(let problem)):
                    return failed(problem.code, problem.message)
                case .none:
                    if let cancelled = abandoned([]) { return cancelled }
                    return failed(.deadlineExceeded, "the batch deadline passed while the video was being moved into MPEG-4")
                }
            }
            let started = ContinuousClock.now
            // Any MPEG-4 file may turn out to hold video: a poster is made whenever there is one.
            let destination = batch.directory.thumbnailBase(index: index)
            let time = request.options?.thumbnailTime
            let shape: Thumbnailer.Shape = .clip(request.clip ?? .whole)
            let limits = MediaProber.Limits(configuration)
            let source = delivered.path
            let result = await decode(.probe(source: source, type: delivered.type, thumbnailTime: time, thumbnailBase: destination,
                                             shape: shape, limits: limits),
                                      batch: batch, pool: probePool)?.result(\.probed)
            switch result {
            case .some(.success(let probed)):
                delivered.type = probed.resolvedType
                descriptor.record(probed.probe)
                thumbnailWork = probed.poster
                descriptor.timings.probe = started.millisecondsElapsed
            case .some(.failure(let problem)):
                unlink(source)
                return failed(problem.code, problem.message)
            case .none:
                // At the deadline the file is delivered as sniffed, without probe or poster.
                if let cancelled = abandoned([source]) { return cancelled }
            }
            if let refusal = MediaPolicy.checkDelivered(delivered.type, bytes: descriptor.bytes ?? outcome.bytes, limits: configuration.sizeLimits) {
                unlink(source)
                if let thumbnailWork { unlink(thumbnailWork.file) }
                return failed(refusal.code, refusal.message)
            }
        }
        descriptor.record(delivered: delivered.type)

        let finalPath = "\(batch.finalDirectory)/\(baseName).\(delivered.type.fileExtension)"
        if let problem = FileNames.moveNoReplace(delivered.path, to: finalPath) {
            unlink(delivered.path)
            if let thumbnailWork { unlink(thumbnailWork.file) }
            return failed(.ioError, problem)
        }
        descriptor.file = finalPath
        if let made = thumbnailWork {
            let thumbnailPath = "\(batch.finalDirectory)/\(baseName).thumb.\((made.file as NSString).pathExtension)"
            if let problem = FileNames.moveNoReplace(made.file, to: thumbnailPath) {
                unlink(made.file)
                logger.warning("thumbnail not kept", metadata: ["problem": "\(problem)"])
            } else {
                descriptor.thumbnail = .init(file: thumbnailPath, width: made.width, height: made.height, time: made.time)
            }
        }
        descriptor.timings.total = batch.start.millisecondsElapsed
        return descriptor
    }

    /// Runs a decode job on the pool's threads (in their worker processes, when isolated).
    /// Returns nil when the task was cancelled (the deadline or the caller) first; a job still
    /// running then is stopped (its worker killed, when isolated) and whatever it made is removed.
    private func decode(_ job: DecodeJob, batch: Batch, pool: WorkerPool) async -> DecodeAnswer? {
        let result = OneShot<DecodeAnswer>()
        let directory = batch.directory
        pool.submit { thread in
            // Abandoned while queued (deadline or cancellation): do not start.
            if result.isAbandoned {
                directory.lateFileRemoved()
                return
            }
            let made = thread.decode(job) { result.isAbandoned }
            if !result.deliver(made) {
                made.files.forEach { _ = unlink($0) }
                directory.lateFileRemoved()
            }
        }
        return await result.wait()
    }
}

/// Everything the items of one batch share.
private final class Batch: Sendable {
    private static let nextID = Atomic<Int>(0)
    let id = Batch.nextID.add(1, ordering: .relaxed).newValue
    let start: ContinuousClock.Instant
    let deadline: ContinuousClock.Instant
    let directory: WorkingDirectory
    /// Where ready files end up: the working directory itself, or the caller's directory.
    let finalDirectory: String
    let deadlineFired = Atomic<Bool>(false)

    init(start: ContinuousClock.Instant, deadline: ContinuousClock.Instant, directory: WorkingDirectory, finalDirectory: String) {
        self.start = start
        self.deadline = deadline
        self.directory = directory
        self.finalDirectory = finalDirectory
    }
}
