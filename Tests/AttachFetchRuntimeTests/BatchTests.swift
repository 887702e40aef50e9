import AttachFetchCore
import AttachFetchRuntime
import Testing
import TestHelpers

/// What a batch runs under (`Batch`) alone, on a clock the test moves: its deadline, its
/// extension, and how a stop is told from a caller's cancellation.
@Suite struct BatchTests {
    /// A job that runs until it is cancelled, and says whether it was.
    static let untilCancelled: @Sendable () async -> Bool = {
        while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
        return Task.isCancelled
    }

    @Test func aStopBeforeTheDeadlineIsTheCallersAndAfterItTheDeadlines() async throws {
        let time = ManualClock()
        let batch = Batch(start: .now, deadline: time.now + .seconds(10), clock: time.clock)
        #expect(batch.stopCause == .cancellation)
        #expect(batch.stopReason(queued: false).code == .cancelled)
        #expect(batch.settle(Reason(code: .cancelled, message: "stopped"), queued: false).code == .cancelled)
        #expect(batch.remaining == .seconds(10))
        let race = Task {
            var ended: [Bool] = []
            await batch.racingDeadline([Self.untilCancelled, Self.untilCancelled]) { _, cancelled in ended.append(cancelled) }
            return ended
        }
        try await waitUntil("the deadline sentinel to sleep") { time.sleeping == 1 }
        time.advance(by: .seconds(10))
        let ended = await race.value
        #expect(ended == [true, true], "the jobs ended \(ended), not cancelled by the deadline")
        #expect(batch.stopCause == .deadline)
        let queued = batch.stopReason(queued: true)
        #expect(queued.code == .deadlineExceeded && queued.message.contains("queued"), "\(queued.message)")
        // A download's "cancelled" after the deadline fired is the deadline's; another reason stays.
        #expect(batch.settle(Reason(code: .cancelled, message: "stopped"), queued: false).code == .deadlineExceeded)
        #expect(batch.settle(Reason(code: .originUnavailable, message: "refused"), queued: false).code == .originUnavailable)
    }

    /// A deadline moves only later, and the sentinel follows it: past the first deadline but
    /// before the new one nothing is stopped.
    @Test func theDeadlineMovesOnlyLaterAndTheRaceFollowsIt() async throws {
        let time = ManualClock()
        let first = time.now + .seconds(10)
        let batch = Batch(start: .now, deadline: first, clock: time.clock)
        batch.extendDeadline(to: first - .seconds(5))
        #expect(batch.deadline == first)
        let race = Task { await batch.racingDeadline([Self.untilCancelled]) { _, _ in } }
        try await waitUntil("the deadline sentinel to sleep") { time.sleeping == 1 }
        batch.extendDeadline(to: first + .seconds(10))
        #expect(batch.deadline == first + .seconds(10))
        time.advance(by: .seconds(10))
        // Woken at the first deadline, the sentinel sleeps again until the new one.
        try await waitUntil("the sentinel to sleep until the new deadline") { time.sleeping == 1 }
        #expect(batch.stopCause == .cancellation, "the deadline fired before the one it was moved to")
        time.advance(by: .seconds(10))
        await race.value
        #expect(batch.stopCause == .deadline)
    }

    /// Transfer slots are shared between batches by id: each batch has its own, and shared
    /// work counts against the batch that started it.
    @Test func eachBatchHasItsOwnFairnessIDUnlessGivenOne() {
        let a = Batch(start: .now, deadline: .now, clock: .system)
        let b = Batch(start: .now, deadline: .now, clock: .system)
        let shared = Batch(start: .now, deadline: .now, clock: .system, fairnessID: a.id)
        #expect(a.id != b.id && shared.id == a.id)
    }
}
