import AttachFetchRuntime
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization
internal import Tracing

/// One attachment, for one caller: the URL checked, the shared result found or made, and
/// handed over as the caller's own descriptor and files.
extension AttachmentPipeline {
    /// One caller's attachment: the URL checked, then the shared result for its URL and
    /// options (cached, coalesced, or made now), handed over as the caller's own descriptor and
    /// files in `directory` (none without one).
    func attachment(index: Int, request: AttachmentRequest, batch: Batch, directory: String?,
                            logger: Logger) async -> AttachmentDescriptor {
        let span = InstrumentationSystem.tracer.startSpan("attach_fetch.attachment")
        defer { span.end() }
        ClientSpanAttributes.record(url: request.url, on: span)
        let made = await ServiceContext.withValue(span.context) {
            await attachment(index: index, request: request, batch: batch, directory: directory, logger: logger, span: span)
        }
        PipelineSpans.record(made, cache: made.cache?.rawValue, on: span)
        return made
    }

    private func attachment(index: Int, request: AttachmentRequest, batch: Batch, directory: String?,
                            logger: Logger, span: any Span) async -> AttachmentDescriptor {
        let descriptor = Self.builder(for: request, index: index, start: batch.start)
        if let problem = urlProblem(request) { return descriptor.failed(problem) }
        let encrypted = configuration.encrypts(request)
        if encrypted && configuration.mediaEncryption == nil {
            return descriptor.failed(Reason(code: .encryptionUnavailable,
                                            message: "encrypted publishing was asked for, but no media key is configured"))
        }
        let platforms = request.platforms ?? configuration.platforms
        let key = ResultKey(request, platforms: platforms, encrypted: encrypted, pipeline: configuration.transcoding)
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
            // Coalesced or cached: the span that did the work is linked, not this one's child.
            if status != .miss, let madeBy = result.madeBy, span.isRecording {
                span.addLink(SpanLink(context: madeBy, attributes: ["attach_fetch.cache": .string(status.rawValue)]))
            }
            // Work shared with a caller whose deadline came first: try again with the time left.
            if status == .coalesced, result.descriptor.reason?.code == .deadlineExceeded,
               batch.remaining > .milliseconds(5), !Task.isCancelled { continue }
            return handOver(result.descriptor, status: status, to: request, identifier: Self.identifier(of: request, index: index),
                            batch: batch, directory: directory)
        }
    }

    /// Why the request's URL is refused before anything is fetched, or nil.
    func urlProblem(_ request: AttachmentRequest) -> Reason? {
        URLCheck.problem(with: request.url)
            ?? configuration.proxy.flatMap { _ in URLCheck.literalHostRefusal(request.url, policy: configuration.addressPolicy) }
    }

    /// Every request's fresh cached result (held: the caller releases each) with its
    /// identifier, or nil when one of them is not a fresh hit (nothing is then held).
    func freshHits(_ requests: [AttachmentRequest]) -> [(result: SharedResult, identifier: String)]? {
        guard !requests.isEmpty else { return nil }
        var hits: [(result: SharedResult, identifier: String)] = []
        hits.reserveCapacity(requests.count)
        for (index, request) in requests.enumerated() {
            guard urlProblem(request) == nil,
                  let result = results.freshResult(for: ResultKey(request, platforms: request.platforms ?? configuration.platforms,
                                                                  encrypted: configuration.encrypts(request), pipeline: configuration.transcoding))
            else {
                for hit in hits { hit.result.release() }
                return nil
            }
            hits.append((result, Self.identifier(of: request, index: index)))
        }
        return hits
    }

    /// The shared descriptor as this caller's: its identifier, role, options and payload path,
    /// its total time, where it came from, and its own links to the files in `directory` — or,
    /// without a directory (`keepingFiles: false`), no local paths at all.
    func handOver(_ shared: AttachmentDescriptor, status: AttachmentDescriptor.CacheStatus, to request: AttachmentRequest,
                          identifier: String, batch: Batch, directory: String?) -> AttachmentDescriptor {
        var mine = shared
        mine.identifier = identifier
        mine.url = request.url
        mine.role = request.role
        mine.options = request.options
        mine.payloadPath = request.payloadPath
        mine.cache = status
        // Reused results took no time of this caller's beyond the total.
        if status == .hit || status == .revalidated || status == .shared { mine.timings = .init(total: 0) }
        mine.timings.total = batch.start.millisecondsElapsed
        guard mine.status == .ready, let file = shared.file else { return mine }
        guard let directory else {
            mine.file = nil
            mine.thumbnail?.file = ""
            for platform in (mine.variants ?? [:]).keys { mine.variants?[platform]?.file = nil }
            return mine
        }

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
}
