@testable import AttachFetch
@testable import AttachFetchTransfer
import Testing

/// Coalescing and caching decided as a value: no tasks run, no files, no sockets. Waiters are
/// names; what each call returns is what `SharedResults` would do after letting go of its lock.
@Suite struct SharedResultsStateMachineTests {
    typealias Machine = SharedResultsStateMachine<String>

    private static let start = ContinuousClock.now
    private static func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

    private static func key(_ name: String) -> ResultKey {
        ResultKey(AttachmentRequest(url: "http://127.0.0.1/\(name).jpg"), platforms: [.ios])
    }

    private static func result(_ name: String, etag: String? = nil) -> SharedResult {
        var headers = CacheHeaders()
        headers.etag = etag
        return SharedResult(descriptor: AttachmentDescriptor(identifier: name, url: name, status: .ready, timings: .init(total: 1)),
                            files: [], publishedFiles: [], headers: headers, lifetime: .seconds(60), store: nil)
    }

    private static func produced(_ result: SharedResult, lifetime: Duration? = .seconds(60)) -> SharedResults.Produced {
        .init(result: result, lifetime: lifetime, revalidated: false)
    }

    /// Starts `key`'s work for a new waiter; returns the flight.
    private static func startWork(_ machine: inout Machine, _ key: ResultKey, _ waiter: String,
                                  now: Int = 0) throws -> (flight: UInt64, stale: SharedResult?) {
        let id = machine.newWaiter()
        guard case .startWork(let flight, let stale, _) = machine.lookup(key, waiterID: id, waiter, deadline: at(now + 20),
                                                                          fairnessID: 0, cancelled: false, now: at(now)) else {
            throw Unexpected(what: "no work started for \(waiter)")
        }
        return (flight, stale)
    }

    struct Unexpected: Error { let what: String }

    @Test func waitersOfRunningWorkShareItsResultAndTheCreatorIsTheMiss() throws {
        var machine = Machine(caching: nil)
        let key = Self.key("a")
        let (flight, stale) = try Self.startWork(&machine, key, "first")
        #expect(stale == nil)
        let second = machine.newWaiter()
        guard case .wait = machine.lookup(key, waiterID: second, "second", deadline: Self.at(30), fairnessID: 1,
                                          cancelled: false, now: Self.at(1)) else { throw Unexpected(what: "second did not join") }
        let action = machine.finish(key, flightID: flight, Self.produced(Self.result("a")), now: Self.at(2))
        #expect(Dictionary(uniqueKeysWithValues: action.answers.map { ($0.waiter, $0.status) }) == ["first": .miss, "second": .coalesced])
        #expect(action.release.isEmpty)
        #expect(machine.count == 0, "without caching nothing is kept")
        _ = try Self.startWork(&machine, key, "third", now: 3)
    }

    @Test func aCachedResultIsAHitWhileFreshAndItsStaleSelfIsRevalidated() throws {
        var machine = Machine(caching: ResultCaching())
        let key = Self.key("a")
        let result = Self.result("a", etag: #""v1""#)
        let (flight, _) = try Self.startWork(&machine, key, "first")
        _ = machine.finish(key, flightID: flight, Self.produced(result), now: Self.at(0))
        #expect(machine.count == 1)
        guard case .answer(let hit?) = machine.lookup(key, waiterID: machine.newWaiter(), "later", deadline: Self.at(80),
                                                      fairnessID: 0, cancelled: false, now: Self.at(59)) else {
            throw Unexpected(what: "no hit at 59 s")
        }
        #expect(hit.result === result && hit.status == .hit)
        let atSixty = machine.hit(key, now: Self.at(60))
        #expect(atSixty == nil, "fresh for 60 s, not at 60 s")
        let (_, stale) = try Self.startWork(&machine, key, "stale", now: 61)
        #expect(stale === result, "the work is handed the stale result to revalidate")
    }

    @Test func theLeastRecentlyUsedEntryIsEvictedAndReturnedToRelease() throws {
        var machine = Machine(caching: ResultCaching(maxEntries: 2))
        var results: [String: SharedResult] = [:]
        for name in ["a", "b"] {
            results[name] = Self.result(name)
            let (flight, _) = try Self.startWork(&machine, Self.key(name), name)
            _ = machine.finish(Self.key(name), flightID: flight, Self.produced(results[name]!), now: Self.at(0))
        }
        // Many uses of "a" (the use log is compacted on the way) leave "b" the least recent.
        for second in 0..<500 {
            let hit = machine.hit(Self.key("a"), now: Self.at(second % 50))
            #expect(hit === results["a"])
        }
        let c = Self.result("c")
        let (flight, _) = try Self.startWork(&machine, Self.key("c"), "c")
        let action = machine.finish(Self.key("c"), flightID: flight, Self.produced(c), now: Self.at(1))
        #expect(action.release.count == 1 && action.release.first === results["b"])
        #expect(machine.cached(Self.key("b")) == nil && machine.cached(Self.key("a")) === results["a"]
                && machine.cached(Self.key("c")) === c)
    }

    @Test func theLastWaiterToLeaveCancelsTheWorkAndWaitsForIt() throws {
        var machine = Machine(caching: nil)
        let key = Self.key("a")
        let (flight, _) = try Self.startWork(&machine, key, "first")
        let task = Task<Void, Never> {}
        let recorded = machine.workStarted(key, flightID: flight, task: task)
        #expect(recorded)
        let second = machine.newWaiter()
        _ = machine.lookup(key, waiterID: second, "second", deadline: Self.at(40), fairnessID: 0, cancelled: false, now: Self.at(1))
        guard case .none = machine.leave(key, waiterID: 1, staysAtCancel: { _ in true }) else {
            throw Unexpected(what: "a waiter that stays left")
        }
        guard case .answerNil("second", nil) = machine.leave(key, waiterID: second, staysAtCancel: { _ in false }) else {
            throw Unexpected(what: "the second waiter was not answered alone")
        }
        guard case .answerNil("first", let cancelled?) = machine.leave(key, waiterID: 1, staysAtCancel: { _ in false }) else {
            throw Unexpected(what: "the last waiter did not cancel the work")
        }
        #expect(cancelled == task)
        let abandoned = machine.takeAbandoned(waiterID: 1), again = machine.takeAbandoned(waiterID: 1)
        #expect(abandoned == task && again == nil)
        let late = machine.finish(key, flightID: flight, Self.produced(Self.result("a")), now: Self.at(2))
        #expect(late.answers.isEmpty && machine.count == 0, "abandoned work answers nobody")
        let recordedLate = machine.workStarted(key, flightID: flight, task: task)
        #expect(!recordedLate, "a task recorded after everyone left is cancelled")
    }

    @Test func aCancelledCallerIsAnsweredAtOnceAndRemoveAllGivesBackEverything() throws {
        var machine = Machine(caching: ResultCaching())
        guard case .answer(nil) = machine.lookup(Self.key("a"), waiterID: machine.newWaiter(), "x", deadline: Self.at(1),
                                                 fairnessID: 0, cancelled: true, now: Self.at(0)) else {
            throw Unexpected(what: "a cancelled caller waited")
        }
        let result = Self.result("a")
        let (flight, _) = try Self.startWork(&machine, Self.key("a"), "a")
        _ = machine.finish(Self.key("a"), flightID: flight, Self.produced(result), now: Self.at(0))
        let (running, _) = try Self.startWork(&machine, Self.key("b"), "b")
        let task = Task<Void, Never> {}
        _ = machine.workStarted(Self.key("b"), flightID: running, task: task)
        let droppedOther = machine.drop(Self.key("a"), ifStill: Self.result("other"))
        #expect(droppedOther == nil, "only the entry that was looked at is dropped")
        let (release, cancel) = machine.removeAll()
        #expect(release.count == 1 && release.first === result && cancel == [task] && machine.count == 0)
    }
}
