import DeadlineRace
import Foundation
import Synchronization
import Testing

/// `Deadline.race(width:…)`, the race a batch's attachments run under: items pulled only when
/// there is room, results in any order with their indices, and every item answered by the
/// deadline, started or not.
@Suite struct WindowedRaceTests {
    /// Pulls 0, 1, 2, … up to `count`, then nil; counts the pulls.
    final class Source: Sendable {
        let count: Int
        let pulled = Atomic<Int>(0)
        init(count: Int) { self.count = count }
        func next() -> Int? {
            let index = pulled.add(1, ordering: .relaxed).oldValue
            return index < count ? index : nil
        }
    }

    @Test func neverMoreThanTheWidthRunAndEveryItemIsAnsweredOnce() async {
        let source = Source(count: 200)
        let running = Atomic<Int>(0), most = Atomic<Int>(0)
        var results: [Int: Int] = [:]
        await Deadline.race(width: 8, next: { source.next() }, run: { index, item in
            let now = running.add(1, ordering: .relaxed).newValue
            most.max(now, ordering: .relaxed)
            try? await Task.sleep(for: .milliseconds(1))
            running.subtract(1, ordering: .relaxed)
            return item * 2
        }, unstarted: { _, _ in Issue.record("no deadline came"); return -1 },
           waitForDeadline: { try? await Task.sleep(for: .seconds(60)) },
           each: { index, value in
            #expect(results[index] == nil, "item \(index) answered twice")
            results[index] = value
        })
        #expect(results.count == 200 && results.allSatisfy { $0.value == $0.key * 2 })
        #expect(most.load(ordering: .relaxed) <= 8, "\(most.load(ordering: .relaxed)) ran at once")
    }

    @Test func itemsThatNeverGotTheirTurnAreAnsweredAtTheDeadline() async {
        let source = Source(count: 1_000)
        var results: [Int: String] = [:]
        let start = ContinuousClock.now
        // The deadline comes once the window is full (not after a time, which a busy machine
        // may spend before four items have started).
        let started = Atomic<Int>(0)
        await Deadline.race(width: 4, next: { source.next() }, run: { _, _ in
            started.add(1, ordering: .relaxed)
            return (try? await Task.sleep(for: .seconds(30))) == nil ? "cancelled" : "slept"
        }, unstarted: { _, _ in "unstarted" }, waitForDeadline: {
            while started.load(ordering: .relaxed) < 4 { try? await Task.sleep(for: .milliseconds(5)) }
        }, each: { results[$0] = $1 })
        let took = ContinuousClock.now - start
        #expect(results.count == 1_000)
        #expect(results.values.filter { $0 == "cancelled" }.count == 4)
        #expect(results.values.filter { $0 == "unstarted" }.count == 996)
        #expect(took < .seconds(10), "\(took)")
    }

    @Test func noItemsAnswerAtOnceAndTheSentinelNeverStarts() async {
        let started = Flag()
        await Deadline.race(width: 4, next: { () -> Int? in nil }, run: { _, item in item },
                            unstarted: { _, item in item }, waitForDeadline: { started.set() },
                            each: { _, _ in Issue.record("no item, no result") })
        #expect(!started.isSet)
    }

    /// A source that waits (a pipe whose writer is slow) delays neither the results of the
    /// items already pulled nor the deadline: the source's second pull returns only once the
    /// first result is in and the deadline has fired (or after 10 s, which fails the test).
    @Test func aSlowSourceHoldsBackNeitherResultsNorTheDeadline() async {
        let pulls = Atomic<Int>(0)
        let answered = Flag(), deadlineFired = Flag(), sawBoth = Flag()
        var results: [Int: String] = [:]
        await Deadline.race(width: 4, next: { () -> Int? in
            let pull = pulls.add(1, ordering: .relaxed).oldValue
            if pull == 0 { return 0 }
            if pull == 1 {
                for _ in 0..<1_000 where !(answered.isSet && deadlineFired.isSet) { try? await Task.sleep(for: .milliseconds(10)) }
                if answered.isSet && deadlineFired.isSet { sawBoth.set() }
                return 1
            }
            return nil
        }, run: { _, _ in "done" }, unstarted: { _, _ in "unstarted" },
           waitForDeadline: { try? await Task.sleep(for: .milliseconds(100)); deadlineFired.set() },
           each: { index, value in
            answered.set()
            results[index] = value
        })
        #expect(sawBoth.isSet, "the source was waited for: a result or the deadline came only after it returned")
        #expect(results == [0: "done", 1: "unstarted"])
    }
}
