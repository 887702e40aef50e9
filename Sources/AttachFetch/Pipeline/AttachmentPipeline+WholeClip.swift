import AttachFetchRuntime
import Foundation
import Logging

/// A campaign's whole clip (`ResultCaching.wholeClipBudget`): when a caller's deadline cut a
/// transcode short, the body is kept and the stages run again on it, nobody waiting, on the
/// background decoder thread, until the whole clip is made.
extension AttachmentPipeline {
    /// A fetched body and what its download taught: the source the stages start from. Its
    /// body file is held here, so a run that keeps it for a second run keeps it open.
    final class KeptSource: Sendable {
        let body: UnnamedFile?
        let descriptor: DescriptorBuilder
        let headers: CacheHeaders
        private let fetchedSource: AttachmentWork.Source
        private struct Resumed {
            /// Where a second run's ledger has the body.
            var path: String?
            /// The object-store lease the first run took, handed to the second to renew and give back.
            var leaseName: String?
        }
        private let resumed = Locked(Resumed())

        init(body: UnnamedFile?, descriptor: DescriptorBuilder, headers: CacheHeaders, source: AttachmentWork.Source) {
            (self.body, self.descriptor, self.headers, self.fetchedSource) = (body, descriptor, headers, source)
        }

        /// Where the stages read the body.
        var source: AttachmentWork.Source {
            var source = fetchedSource
            if let moved = resumed.withLock({ $0.path }) { source.path = moved }
            return source
        }

        func resume(at path: String) { resumed.withLock { $0.path = path } }

        var leaseName: String? {
            get { resumed.withLock { $0.leaseName } }
            set { resumed.withLock { $0.leaseName = newValue } }
        }

        /// Itself when its body is an unnamed file, which stays open while held; a named body
        /// is removed with its run's ledger, so it is not kept.
        var keptBody: KeptSource? { body == nil ? nil : self }
    }

    /// A campaign's whole clip: the stages run again on the kept source, nobody waiting, under
    /// the whole-clip budget. The object-store lease the first run kept is renewed while it runs,
    /// and given back once the result is stored for the other replicas.
    func wholeClip(_ request: AttachmentRequest, platforms: Set<Platform>, number: Int, directory: String,
                   kept: KeptSource, batch: Batch, logger: Logger) async -> WorkOutcome {
        guard let shared = storeResults, let name = kept.leaseName else {
            return await maker.work(request, platforms: platforms, number: number, directory: directory,
                              validators: nil, batch: batch, logger: logger, resuming: kept)
        }
        let renewal = Task {
            while !Task.isCancelled {
                _ = await shared.renewLease(name, expires: shared.wallNow + StoreResults.renewedLeaseSeconds, deadline: batch.deadline)
                try? await Task.sleep(for: .seconds(StoreResults.renewedLeaseSeconds / 3))
            }
        }
        let outcome = await maker.work(request, platforms: platforms, number: number, directory: directory,
                                 validators: nil, batch: batch, logger: logger, resuming: kept)
        renewal.cancel()
        await renewal.value
        if case .made(let descriptor, _, _, _, let headers, _) = outcome,
           let lifetime = freshness(ready: descriptor.status == .ready, reason: descriptor.reason, headers: headers) {
            await shared.write(shared.record(of: descriptor, headers: headers, lifetime: lifetime), name: name,
                               deadline: max(batch.deadline, batch.clock.now + StoreResults.leaseGrace))
        }
        await shared.releaseLease(name)
        return outcome
    }
}
