import AttachFetchRuntime
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging

extension AttachmentPipeline {
    // MARK: Work shared across replicas through the object store

    /// A local miss with the object store as the shared cache: another replica's fresh result
    /// is used as it is; else one replica (the lease holder) fetches and stores its result,
    /// while the others wait for that result, each within its own deadline.
    func sharedWork(_ request: AttachmentRequest, platforms: Set<Platform>, number: Int, directory: String,
                    stale: SharedResult?, shared: StoreResults, batch: Batch, logger: Logger) async -> WorkOutcome {
        // An encrypted result's record would put its keys in the store beside the ciphertext:
        // it is not shared. Replicas still publish the same objects (encryption is deterministic).
        let encrypted = configuration.encrypts(request)
        guard !encrypted, let name = shared.name(for: ResultKey(request, platforms: platforms, encrypted: encrypted, pipeline: configuration.transcoding)) else {
            return await maker.work(request, platforms: platforms, number: number, directory: directory,
                              validators: stale?.headers.validators, batch: batch, logger: logger)
        }
        let base = "\(directory)/r\(number)"
        var storedStale: StoreResults.Record?
        var pause = Duration.milliseconds(40)
        var leaseHeld = false
        while !leaseHeld {
            if let record = await shared.read(name, deadline: batch.deadline) {
                if record.isFresh(at: shared.wallNow), let outcome = await reuse(record, base: base, shared: shared, batch: batch, revalidatedBy: nil) {
                    return outcome
                }
                if record.descriptor.status == .ready, record.headers.validators != nil { storedStale = record }
            }
            if Task.isCancelled { return stopped(request, number: number, batch: batch) }
            switch await shared.acquireLease(name, expires: shared.wallNow + batch.remaining.seconds + 1,
                                             deadline: batch.deadline) {
            case .acquired:
                leaseHeld = true
                // The holder before may have stored its result and let go between this
                // replica's read and its lease: read once more before going to the origin.
                if let record = await shared.read(name, deadline: batch.deadline), record.isFresh(at: shared.wallNow),
                   let outcome = await reuse(record, base: base, shared: shared, batch: batch, revalidatedBy: nil) {
                    await shared.releaseLease(name)
                    return outcome
                }
            case .unavailable: leaseHeld = true
            case .held:
                // Another replica is fetching: wait for its result (or its lease's expiry).
                let jittered = Duration.milliseconds(Int.random(in: Int(pause.milliseconds / 2)...Int(pause.milliseconds)))
                do { try await Task.sleep(for: jittered) } catch { return stopped(request, number: number, batch: batch) }
                pause = min(pause * 2, .milliseconds(500))
            }
        }
        // The holder fetches: conditionally when a stale result (local, or stored) may still be good.
        let validators = stale?.headers.validators ?? storedStale?.headers.validators
        let outcome = await maker.work(request, platforms: platforms, number: number, directory: directory,
                                 validators: validators, batch: batch, logger: logger)
        var finished = outcome
        switch outcome {
        case .made(let descriptor, _, _, _, let headers, let resumable):
            if let resumable, leaseHeld, let budget = configuration.cache?.wholeClipBudget {
                // The clip the deadline cut short, for the other replicas' callers while the
                // whole one is made here; the lease goes with the work that makes it.
                var provisional = shared.record(of: descriptor, headers: headers, lifetime: budget)
                provisional.provisional = true
                await shared.write(provisional, name: name, deadline: batch.deadline + StoreResults.leaseGrace)
                resumable.leaseName = name
                return finished
            }
            if descriptor.skippedAtDeadline == nil,
               let lifetime = freshness(ready: descriptor.status == .ready, reason: descriptor.reason, headers: headers) {
                await shared.write(shared.record(of: descriptor, headers: headers, lifetime: lifetime), name: name, deadline: batch.deadline)
            }
        case .notModified(let headers):
            if stale == nil, let storedStale {
                // The stored result confirmed: renewed in the store, and used here.
                let lifetime = headers.speaksOfFreshness ? freshness(ready: true, reason: nil, headers: headers) : nil
                var renewed = storedStale
                renewed.headers = headers.validators == nil ? storedStale.headers : headers
                if let lifetime {
                    renewed.storedAt = shared.wallNow
                    renewed.freshUntil = renewed.storedAt + lifetime.seconds
                    await shared.write(renewed, name: name, deadline: batch.deadline)
                }
                finished = await reuse(renewed, base: base, shared: shared, batch: batch, revalidatedBy: lifetime ?? .zero)
                    ?? .made(Self.builder(for: request, index: number, start: batch.start).failed(
                        Reason(code: .ioError, message: "the stored result's files could not be read back")), files: [], headers: headers)
            }
        case .fromStore:
            break
        }
        await shared.releaseLease(name)
        return finished
    }

    /// A stored result, its files downloaded into the work store; nil when they cannot be
    /// (the origin is then asked). `revalidatedBy`: the lifetime a 304 just gave it.
    private func reuse(_ record: StoreResults.Record, base: String, shared: StoreResults, batch: Batch,
                       revalidatedBy lifetime: Duration?) async -> WorkOutcome? {
        do throws(ObjectStoreError) {
            let (descriptor, files) = try await shared.materialize(record, base: base, deadline: batch.deadline)
            // A clip cut short while another replica makes the whole one: used, but asked for
            // again soon, so that the whole clip replaces it.
            var remaining = lifetime ?? record.remaining(at: shared.wallNow)
            if record.provisional == true { remaining = min(remaining, StoreResults.provisionalReuse) }
            return .fromStore(descriptor, files: files, headers: record.headers,
                              lifetime: configuration.cache.map { min(remaining, $0.maximumFreshness) }, revalidated: lifetime != nil)
        } catch {
            logger.debug("shared result not reused", metadata: ["problem": "\(error.description)"])
            return nil
        }
    }

    private func stopped(_ request: AttachmentRequest, number: Int, batch: Batch) -> WorkOutcome {
        .made(Self.builder(for: request, index: number, start: batch.start).failed(batch.stopReason(queued: true)),
              files: [], headers: CacheHeaders())
    }
}
