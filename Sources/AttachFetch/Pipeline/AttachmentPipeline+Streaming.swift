import AttachFetchRuntime
import Logging

extension AttachmentPipeline {
    /// Processes a batch whose requests arrive as a sequence (lines of a file, rows of a
    /// query), reading each request only when its turn comes: at most as many attachments are
    /// worked on at once as transfers may run, and nothing is kept per attachment once its
    /// descriptor is handed to `onDescriptor`. So a batch of any length costs the memory of the
    /// work in flight, plus whatever the caller keeps of the descriptors.
    ///
    /// Every request gets exactly one descriptor by the deadline, as with `process`: the
    /// requests the deadline finds waiting for their turn (read after it, if the sequence is
    /// still going) get `deadlineExceeded` with `timings.queued`. Identifiers default to
    /// `attachment-<index>`, the index counting from 0 in the sequence's order.
    ///
    /// - Parameters:
    ///   - requests: read one at a time (from a task of the batch's own, never two reads at
    ///     once), as room for more comes: a slow source delays neither the descriptors of the
    ///     requests already read nor the deadline.
    ///   - isolation: where `onDescriptor` runs: the caller's actor, if any.
    ///   - onDescriptor: each descriptor with its index, in the order they finish, called from
    ///     the calling task (never two at once).
    ///   - The other parameters are `process`'s.
    /// - Returns: how many requests there were, the time taken and the directory of ready files.
    public func process<Requests: AsyncSequence<AttachmentRequest, Never>>(
        streaming requests: Requests, deadline: Duration? = nil, outputDirectory: String? = nil,
        keepingFiles: Bool = true, logger: Logger? = nil, isolation: isolated (any Actor)? = #isolation,
        onDescriptor: (Int, AttachmentDescriptor) -> Void
    ) async -> StreamedBatch {
        let logger = logger ?? self.logger
        let budget = deadline ?? configuration.defaultDeadline
        let start = ContinuousClock.now
        let batch = Batch(start: start, deadline: configuration.clock.now + budget, clock: configuration.clock)
        var iterator = requests.makeAsyncIterator()
        var count = 0
        let output: BatchOutput?
        do {
            output = keepingFiles ? try BatchOutput(outputDirectory, temporaryDirectory: configuration.temporaryDirectory) : nil
        } catch {
            // Every request fails the same way, read one at a time still.
            let reason = Reason(code: .ioError, message: error.message)
            while let request = await iterator.next(isolation: isolation) {
                onDescriptor(count, Self.builder(for: request, index: count, start: start).failed(reason))
                count += 1
            }
            return StreamedBatch(count: count, elapsed: .now - start, deadline: budget, directory: nil)
        }
        logger.debug("streamed batch started", metadata: ["directory": "\(output?.path ?? "none")"])
        let source = RequestSource(iterator)
        await runItems(batch, next: { await source.next() }, directory: output?.path, logger: logger, finished: nil,
                       isolation: isolation) { index, descriptor in
            count += 1
            onDescriptor(index, descriptor)
        }
        logger.debug("streamed batch finished", metadata: ["elapsedMs": "\(start.millisecondsElapsed)", "count": "\(count)"])
        return StreamedBatch(count: count, elapsed: .now - start, deadline: budget, directory: output?.finish())
    }
}

/// A streamed batch's iterator, pulled from the race's pulling task. Not generic, so that the
/// pulling closure captures no metatype of the caller's iterator (which need not be Sendable).
private final class RequestSource: @unchecked Sendable {
    // @unchecked: `pull` (and the iterator it holds) is only used by `next()`, and the race has
    // at most one call of it outstanding, each in a child task it awaits before it makes the
    // next: one task at a time, each call ordered after the previous one by that await.
    private let pull: () async -> AttachmentRequest?

    init<Iterator: AsyncIteratorProtocol>(_ iterator: Iterator)
    where Iterator.Element == AttachmentRequest, Iterator.Failure == Never {
        var iterator = iterator
        pull = { await iterator.next(isolation: nil) }
    }

    func next() async -> AttachmentRequest? { await pull() }
}

/// What a streamed batch (`AttachmentPipeline.process(streaming:)`) returns once every request
/// has its descriptor: the descriptors themselves went to the caller one by one.
public struct StreamedBatch: Sendable {
    /// How many requests the sequence gave, and so how many descriptors were handed over.
    public var count: Int
    /// Time from the call to its return.
    public var elapsed: Duration
    /// The deadline the batch ran under.
    public var deadline: Duration
    /// Where ready files were kept, or nil when none were kept.
    public var directory: String?

    /// Makes a streamed batch's summary, for example a fake in a test.
    public init(count: Int, elapsed: Duration, deadline: Duration, directory: String?) {
        self.count = count
        self.elapsed = elapsed
        self.deadline = deadline
        self.directory = directory
    }
}
