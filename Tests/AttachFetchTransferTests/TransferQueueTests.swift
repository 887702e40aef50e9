import AttachFetchCore
import AttachFetchRuntime
import Testing
@testable import AttachFetchTransfer

/// The order in which waiting downloads get transfer slots, without sockets: `TransferQueue`
/// alone, with jobs that are never started.
@Suite struct TransferQueueTests {
    private func job(batch: Int, host: String = "http://127.0.0.1:9", deadline: Batch) -> TransferJob {
        TransferJob(spec: TransferSpec(batch: batch, url: "\(host)/\(batch)", origin: URLCheck.origin(of: "\(host)/\(batch)"), bodyPath: "/nonexistent", runningUnder: deadline,
                                       timeout: TransferTimeouts(connect: .seconds(5), request: .seconds(10), stall: .seconds(3)),
                                       sizeLimits: MediaSizeLimits(), maxRedirects: 0, addressPolicy: AddressPolicy(),
                                       imagesOnly: false, normalize: true, trustStore: nil, proxy: nil))
    }

    private func later(_ seconds: Int) -> Batch { Batch(start: .now, deadline: .now + .seconds(seconds), clock: .system) }

    @Test func aFreeSlotGoesToTheBatchWithFewestRunningOldestJobFirst() {
        var queue = TransferQueue()
        let far = later(60)
        let a = (0..<4).map { _ in job(batch: 1, deadline: far) }
        let b = (0..<2).map { _ in job(batch: 2, deadline: far) }
        for j in a { queue.append(j) }
        for j in b { queue.append(j) }
        // Batch 1 queued first: it gets the first slot, then batch 2 (0 running against 1), then alternating.
        let first = queue.take(slots: 4)
        #expect(first.map { ObjectIdentifier($0) } == [a[0], b[0], a[1], b[1]].map { ObjectIdentifier($0) })
        #expect(queue.count == 2)
        // Batch 2 has nothing waiting: batch 1 takes what frees up, oldest first.
        queue.finished(first[1])
        #expect(queue.take(slots: 1).map { ObjectIdentifier($0) } == [ObjectIdentifier(a[2])])
        // A third batch with nothing running goes before batch 1 (3 running).
        let c = job(batch: 3, deadline: far)
        queue.append(c)
        #expect(queue.take(slots: 1).map { ObjectIdentifier($0) } == [ObjectIdentifier(c)])
        #expect(queue.take(slots: 5).map { ObjectIdentifier($0) } == [ObjectIdentifier(a[3])])
        #expect(queue.count == 0 && queue.take(slots: 1).isEmpty)
    }

    @Test func cancelledAndExpiredJobsLeaveAndAMovedDeadlineIsHonoured() {
        var queue = TransferQueue()
        let soon = Batch(start: .now, deadline: .now - .milliseconds(1), clock: .system)
        let moved = Batch(start: .now, deadline: .now - .milliseconds(1), clock: .system)
        let far = later(60)
        let expiring = job(batch: 1, deadline: soon), extended = job(batch: 1, deadline: moved)
        let cancelled = job(batch: 1, deadline: far), kept = job(batch: 1, deadline: far)
        for j in [expiring, extended, cancelled, kept] { queue.append(j) }
        // Shared work's deadline moves later when a caller with more time joins.
        moved.extendDeadline(to: .now + .seconds(30))
        #expect(queue.remove(cancelled) && !queue.remove(cancelled))
        let expired = queue.removeExpired(now: .now)
        #expect(expired.map { ObjectIdentifier($0) } == [ObjectIdentifier(expiring)])
        #expect(queue.count == 2)
        #expect(queue.take(slots: 3).map { ObjectIdentifier($0) } == [extended, kept].map { ObjectIdentifier($0) })
        #expect(queue.removeExpired(now: .now + .seconds(3600)).isEmpty, "taken jobs never expire from the queue")
    }

    @Test func atShutdownAJobQueuedAgainAfterARetryAfterComesOutOnce() {
        var queue = TransferQueue()
        let far = later(60)
        let a1 = job(batch: 1, deadline: far), a2 = job(batch: 1, deadline: far), b1 = job(batch: 2, deadline: far)
        for j in [a1, a2, b1] { queue.append(j) }
        // Fairness takes a1, then b1 (its batch has none running): b1's entry stays behind a2's.
        #expect(queue.take(slots: 2).map { ObjectIdentifier($0) } == [a1, b1].map { ObjectIdentifier($0) })
        // b1 answered 429 with a Retry-After: back in the queue, a second entry for the same job.
        queue.finished(b1)
        queue.append(b1)
        // Each job is finished once at shutdown: a job handed out twice trips TransferJob's precondition.
        #expect(queue.removeAll().map { ObjectIdentifier($0) } == [a2, b1].map { ObjectIdentifier($0) })
        #expect(queue.count == 0)
    }

    @Test func tenThousandJobsOverEightSlotsComeOutInOrderWithStaleEntriesBounded() {
        var queue = TransferQueue()
        let far = later(60)
        let jobs = (0..<10_000).map { job(batch: $0 % 5, deadline: far) }
        for j in jobs { queue.append(j) }
        var order: [ObjectIdentifier] = []
        var running: [TransferJob] = []
        while queue.count > 0 {
            let taken = queue.take(slots: 8 - running.count)
            order += taken.map { ObjectIdentifier($0) }
            running += taken
            // The oldest transfer ends first.
            queue.finished(running.removeFirst())
        }
        #expect(order.count == 10_000 && Set(order).count == 10_000)
        // Five batches, equal shares: the jobs come out in the order they were queued.
        #expect(order == jobs.map { ObjectIdentifier($0) })
    }

    @Test func oneHostNeverHoldsMoreThanItsCapAndTheRestWaitInTheQueue() {
        var queue = TransferQueue(maxPerHost: 3)
        let far = later(60)
        let jobs = (0..<10).map { _ in job(batch: 1, host: "https://cdn.example.com", deadline: far) }
        for j in jobs { queue.append(j) }
        let first = queue.take(slots: 8)
        #expect(first.count == 3 && queue.running(host: "https://cdn.example.com") == 3)
        #expect(queue.take(slots: 8).isEmpty, "the host is at its cap")
        queue.finished(first[0])
        #expect(queue.take(slots: 8).map { ObjectIdentifier($0) } == [ObjectIdentifier(jobs[3])])
        // Host names differ in case only: one host.
        let sameHost = job(batch: 2, host: "HTTPS://CDN.example.com", deadline: far)
        queue.append(sameHost)
        #expect(queue.take(slots: 8).isEmpty)
        // Another port is another host.
        let otherPort = job(batch: 2, host: "https://cdn.example.com:8443", deadline: far)
        queue.append(otherPort)
        #expect(queue.take(slots: 8).map { ObjectIdentifier($0) } == [ObjectIdentifier(otherPort)])
    }

    @Test func slotsAreSharedBetweenHostsWithinOneBatchAndAcrossBatches() {
        var queue = TransferQueue()
        let far = later(60)
        // One batch queues 20 for a slow host, then 4 for another: the other host's jobs do not
        // wait behind the first host's.
        let slow = (0..<20).map { _ in job(batch: 1, host: "http://slow.example", deadline: far) }
        let fast = (0..<4).map { _ in job(batch: 1, host: "http://fast.example", deadline: far) }
        for j in slow + fast { queue.append(j) }
        let taken = queue.take(slots: 8)
        #expect(taken.filter { $0.spec.origin == "http://fast.example" }.count == 4)
        #expect(taken.filter { $0.spec.origin == "http://slow.example" }.count == 4)
        // Across batches: a second batch's host gets the next free slot, though the first
        // batch's jobs were queued earlier.
        let other = job(batch: 2, host: "http://third.example", deadline: far)
        queue.append(other)
        queue.finished(taken[0])
        #expect(queue.take(slots: 1).map { ObjectIdentifier($0) } == [ObjectIdentifier(other)])
        // Within one host, batches still share: batch 3 (nothing running) goes before batch 1.
        let late = job(batch: 3, host: "http://slow.example", deadline: far)
        queue.append(late)
        queue.finished(taken[1])
        #expect(queue.take(slots: 1).map { ObjectIdentifier($0) } == [ObjectIdentifier(late)])
    }

    @Test func originsAreSchemeHostAndPortLowercasedWithoutUserInformation() {
        #expect(URLCheck.origin(of: "https://user:pw@CDN.Example.com:8443/a.jpg?x=1") == "https://cdn.example.com:8443")
        #expect(URLCheck.origin(of: "http://[::1]:8080/a") == "http://[::1]:8080")
        #expect(URLCheck.origin(of: "http://a.example?q") == "http://a.example")
        #expect(URLCheck.origin(of: "http://a.example") != URLCheck.origin(of: "https://a.example"))
    }

    @Test func aNewHTTPSHostRunsOneTransferUntilItsProtocolIsKnown() {
        var queue = TransferQueue(maxPerHost: 512)
        let far = later(60)
        let host = "https://cdn.example.com"
        let jobs = (0..<300).map { _ in job(batch: 1, host: host, deadline: far) }
        queue.learn(host, .learning)
        for j in jobs { queue.append(j) }
        let first = queue.take(slots: 1024)
        #expect(first.count == 1, "one transfer while its ALPN is unknown")
        // HTTP/2: as many as one connection's streams; HTTP/1.1: the per-host cap.
        queue.learn(host, .multiplexed)
        #expect(queue.take(slots: 1024).count == TransferQueue.streamsPerConnection - 1)
        queue.learn(host, .plain)
        #expect(queue.take(slots: 1024).count == 300 - TransferQueue.streamsPerConnection)
    }
}
