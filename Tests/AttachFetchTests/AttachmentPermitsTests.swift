import Synchronization
import Testing
@testable import AttachFetch

/// The pipeline's bound on attachments in flight across batches: first come, first served, and
/// a waiter stopped by its deadline (a cancellation) leaves without a permit.
@Suite struct AttachmentPermitsTests {
    @Test func aWaiterGetsTheFirstPermitGivenBackAndACancelledOneLeaves() async throws {
        let permits = AttachmentPermits(count: 2)
        #expect(await permits.acquire())
        #expect(await permits.acquire())
        let order = Order()
        let first = Task { let got = await permits.acquire(); order.list.withLock { $0.append("first \(got)") } }
        try await waitUntil("the first waiter queued") { permits.waiters == 1 }
        let cancelled = Task { await permits.acquire() }
        try await waitUntil("the waiter to be cancelled queued") { permits.waiters == 2 }
        let second = Task { let got = await permits.acquire(); order.list.withLock { $0.append("second \(got)") } }
        try await waitUntil("the second waiter queued") { permits.waiters == 3 }
        cancelled.cancel()
        try await waitUntil("the cancelled waiter gone") { permits.waiters == 2 }
        #expect(await cancelled.value == false)
        permits.release()
        await first.value
        permits.release()
        await second.value
        #expect(order.list.withLock { $0 } == ["first true", "second true"])
        // Both permits are held again (first's and second's): a cancelled task gets none.
        let late = Task { await permits.acquire() }
        late.cancel()
        #expect(await late.value == false)
    }
}

extension AttachmentPermitsTests {
    /// A permit given back in the window between a waiter's id and its continuation finds
    /// nobody waiting: the waiter must still get it, not sleep with a permit free until the next
    /// release or its deadline. The window is held open deterministically: the release runs in
    /// it (`whileArriving`).
    @Test func aPermitGivenBackWhileAWaiterArrivesIsThatWaitersAtOnce() async throws {
        let holder = Mutex<AttachmentPermits?>(nil)
        let permits = AttachmentPermits(count: 1, whileArriving: { holder.withLock { $0 }?.release() })
        holder.withLock { $0 = permits }
        #expect(await permits.acquire())
        // The second acquire arrives, the first permit comes back inside its window.
        let second = Task { await permits.acquire() }
        let answered = await withTaskGroup(of: Bool?.self) { group in
            group.addTask { await second.value }
            group.addTask {
                // Waited 10 s: the waiter is asleep with a permit free; cancelled, it answers false.
                try? await Task.sleep(for: .seconds(10))
                second.cancel()
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(answered == true, "the waiter slept with a permit free")
        second.cancel()
    }
}

/// What the waiters saw, in the order they saw it.
private final class Order: Sendable {
    let list = Mutex<[String]>([])
}
