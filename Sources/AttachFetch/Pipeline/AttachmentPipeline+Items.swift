import AttachFetchRuntime
import Logging
internal import Tracing

/// A batch's items, each started when its turn comes: what waits its turn holds no task, no
/// shared-work entry and no transfer job, only its request (or, streamed, not even that).
extension AttachmentPipeline {
    /// How many of one batch's attachments are worked on at once (`maxAttachmentsInFlight`,
    /// or a fixed transfer limit when that is more, so that one batch can still fill it).
    /// Across batches, four times as many (`permits`).
    var itemsInFlight: Int {
        configuration.transferConcurrency == .fixed
            ? max(configuration.maxAttachmentsInFlight, configuration.maxConcurrentTransfers)
            : configuration.maxAttachmentsInFlight
    }

    /// Runs the requests `next` hands out, at most `itemsInFlight` at once, raced against
    /// `batch`'s deadline: each result goes to `finished` as the attachment is done (from its
    /// own task) and to `each` (from the calling task). Requests the deadline finds waiting
    /// for their turn get `deadlineExceeded`, with the wait in `timings.queued`.
    func runItems(_ batch: Batch, next: @escaping @Sendable () async -> AttachmentRequest?, directory: String?, logger: Logger,
                  finished: (@Sendable (Int, AttachmentDescriptor) -> Void)?,
                  isolation: isolated (any Actor)? = #isolation,
                  each: (Int, AttachmentDescriptor) -> Void) async {
        // The batch's span: its attachments' parent (docs/observability.md).
        let span = InstrumentationSystem.tracer.startSpan("attach_fetch.batch")
        defer { span.end() }
        if span.isRecording { span.attributes["attach_fetch.deadline_ms"] = Int(batch.remaining.nanoseconds / 1_000_000) }
        var count = 0
        await ServiceContext.withValue(span.context) {
            await race(batch, next: next, directory: directory, logger: logger, finished: finished) { index, descriptor in
                count += 1
                each(index, descriptor)
            }
        }
        if span.isRecording { span.attributes["attach_fetch.batch.size"] = count }
    }

    private func race(_ batch: Batch, next: @escaping @Sendable () async -> AttachmentRequest?, directory: String?, logger: Logger,
                      finished: (@Sendable (Int, AttachmentDescriptor) -> Void)?,
                      isolation: isolated (any Actor)? = #isolation,
                      each: (Int, AttachmentDescriptor) -> Void) async {
        await batch.racingDeadline(width: itemsInFlight, next: next, run: { index, request in
            // The pipeline's bound across batches: stopped while waiting, it never started.
            guard await self.permits.acquire() else {
                let descriptor = Self.neverStarted(request, index: index, batch: batch)
                finished?(index, descriptor)
                return descriptor
            }
            defer { self.permits.release() }
            let descriptor = await self.attachment(index: index, request: request, batch: batch,
                                                   directory: directory, logger: logger)
            finished?(index, descriptor)
            return descriptor
        }, unstarted: { index, request in
            let descriptor = Self.neverStarted(request, index: index, batch: batch)
            finished?(index, descriptor)
            return descriptor
        }, isolation: isolation, each: each)
    }

    /// The descriptor of a request whose turn never came: stopped by the deadline (or the
    /// caller's cancellation) while it waited, the whole wait counted as queued.
    static func neverStarted(_ request: AttachmentRequest, index: Int, batch: Batch) -> AttachmentDescriptor {
        var descriptor = builder(for: request, index: index, start: batch.start).failed(batch.stopReason(queued: true))
        descriptor.timings.queued = descriptor.timings.total
        return descriptor
    }
}
