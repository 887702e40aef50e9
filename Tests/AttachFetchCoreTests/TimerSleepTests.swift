@testable import AttachFetchCore
import Testing

/// The system clock's sleep (`TimerSleep`), which every batch's and shared work's deadline
/// sentinel runs: cancelled at any moment, it ends at once and leaves nothing to trap on.
@Suite struct TimerSleepTests {
    /// A sleep cancelled between its start and the arming of its timer must not release a
    /// dispatch source never activated, which libdispatch answers with SIGILL (the whole test
    /// process ends). Thousands of sleeps, each cancelled after a different short spin, cross
    /// that moment many times.
    @Test func aSleepCancelledAtAnyMomentEndsAtOnceWithoutATrap() async {
        let lanes = 4, rounds = 5_000
        let cancelledCount = await withTaskGroup(of: Int.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    var cancelled = 0
                    for round in 0..<rounds {
                        let sleep = Task { try await AttachFetchClock.system.sleep(until: .now + .seconds(60)) }
                        // A spin of a different length each round: the cancellation lands before,
                        // during and after the timer is armed.
                        var spin = 0
                        for _ in 0..<((round * 7 + lane * 13) % 400) { spin &+= 1 }
                        if spin % 3 == 0 { await Task.yield() }
                        sleep.cancel()
                        if case .failure(let error) = await sleep.result, error is CancellationError { cancelled += 1 }
                    }
                    return cancelled
                }
            }
            return await group.reduce(0, +)
        }
        #expect(cancelledCount == lanes * rounds, "every cancelled sleep throws CancellationError at once")
    }

    @Test func anUncancelledSleepReturnsAtItsInstant() async throws {
        let start = ContinuousClock.now
        try await AttachFetchClock.system.sleep(until: start + .milliseconds(20))
        #expect(ContinuousClock.now - start >= .milliseconds(20))
    }
}
