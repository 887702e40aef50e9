import HeapModule

/// The claims on the next slot, and the stale entries the heaps and FIFOs keep until they
/// surface (see `TransferQueue`).
extension TransferQueue {
    mutating func takeOne(from host: String) -> TransferJob? {
        while let claim = hosts[host]?.claims.popMin() {
            let batch = claim.owner
            guard hosts[host]?.claimVersions[batch] == claim.version else { continue }
            dropStaleHeads(host: host, batch: batch)
            guard let head = hosts[host]?.batches[batch]?.popFirst() else {
                renewBatchClaim(host: host, batch: batch)
                continue
            }
            waiting.remove(ObjectIdentifier(head.job))
            hosts[host]!.running += 1
            batchRunning[batch, default: 0] += 1
            dropStaleHeads(host: host, batch: batch)
            for waitingHost in batchHosts[batch] ?? [] { renewBatchClaim(host: waitingHost, batch: batch) }
            return head.job
        }
        return nil
    }

    /// A waiting job left the queue without running: its batch's and host's claims move on.
    mutating func withdrawn(_ job: TransferJob) {
        let (batch, host) = (job.spec.batch, job.spec.origin)
        dropStaleHeads(host: host, batch: batch)
        renewBatchClaim(host: host, batch: batch)
        renewHostClaim(host)
    }

    mutating func dropStaleHeads(host: String, batch: Int) {
        guard hosts[host] != nil else { return }
        while let head = hosts[host]!.batches[batch]?.first, !waiting.contains(ObjectIdentifier(head.job)) {
            hosts[host]!.batches[batch]!.removeFirst()
        }
        if hosts[host]!.batches[batch]?.isEmpty == true {
            hosts[host]!.batches[batch] = nil
            batchHosts[batch]?.remove(host)
            if batchHosts[batch]?.isEmpty == true { batchHosts[batch] = nil }
        }
        while let head = hosts[host]!.order.first, !waiting.contains(ObjectIdentifier(head.job)) {
            hosts[host]!.order.removeFirst()
        }
    }

    /// Replaces the batch's claim in `host` (the old one goes stale), or withdraws it when the
    /// batch has nothing waiting there.
    mutating func renewBatchClaim(host: String, batch: Int) {
        guard hosts[host] != nil else { return }
        guard let head = hosts[host]!.batches[batch]?.first else {
            hosts[host]!.claimVersions[batch] = nil
            return
        }
        nextVersion += 1
        hosts[host]!.claimVersions[batch] = nextVersion
        hosts[host]!.claims.insert(BatchClaim(running: batchRunning[batch] ?? 0, oldest: head.sequence, owner: batch, version: nextVersion))
    }

    /// Replaces the host's claim, or withdraws it while the host has nothing waiting or is at
    /// its cap; forgets a host with nothing waiting and nothing running.
    mutating func renewHostClaim(_ host: String) {
        guard let state = hosts[host] else {
            hostClaimVersions[host] = nil
            return
        }
        guard let head = state.order.first, state.running < limit(of: host) else {
            hostClaimVersions[host] = nil
            if state.order.isEmpty && state.running == 0 { hosts[host] = nil }
            return
        }
        nextVersion += 1
        hostClaimVersions[host] = nextVersion
        hostClaims.insert(HostClaim(running: state.running, oldest: head.sequence, owner: host, version: nextVersion))
    }

    mutating func compactIfStale() {
        if hostClaims.count > 2 * hostClaimVersions.count + 64 {
            hostClaims = Heap(hostClaims.unordered.filter { hostClaimVersions[$0.owner] == $0.version })
        }
        for host in hosts.keys where hosts[host]!.claims.count > 2 * hosts[host]!.claimVersions.count + 64 {
            let versions = hosts[host]!.claimVersions
            hosts[host]!.claims = Heap(hosts[host]!.claims.unordered.filter { versions[$0.owner] == $0.version })
        }
        if expiries.count > 2 * waiting.count + 64 {
            expiries = Heap(expiries.unordered.filter { waiting.contains(ObjectIdentifier($0.job)) })
        }
    }
}
