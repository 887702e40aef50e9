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
                    return await self.maker.work(request, platforms: platforms, number: number, directory: directory,
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
}
