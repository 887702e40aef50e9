@testable import AttachFetch
@testable import AttachFetchTransfer
import AttachFetchRuntime
import Testing

/// A campaign's whole clip decided as a value: a clip the deadline cut short answers the callers
/// that cannot wait, while one piece of work, nobody's deadline, makes the whole clip that
/// replaces it. No tasks, files or sockets.
@Suite struct WholeClipStateTests {
    typealias Machine = SharedResultsStateMachine<String>
    struct Unexpected: Error { let what: String }

    private static let start = ContinuousClock.now
    private static func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }
    private static let key = ResultKey(AttachmentRequest(url: "http://127.0.0.1/long.webm"), platforms: [.ios])

    private static func result(_ name: String) -> SharedResult {
        SharedResult(descriptor: AttachmentDescriptor(identifier: name, url: name, status: .ready, timings: .init(total: 1)),
                     files: [], publishedFiles: [], headers: CacheHeaders(), lifetime: nil, store: nil)
    }

    /// The first caller's work ends with a cut clip and a way to make the whole one.
    private static func cutClip(_ machine: inout Machine, budget: Duration = .seconds(120))
        throws -> (cut: SharedResult, action: Machine.FinishAction) {
        let first = machine.newWaiter()
        guard case .startWork(let flight, _, _) = machine.lookup(key, waiterID: first, "first", deadline: at(5), fairnessID: 0,
                                                                 cancelled: false, now: at(0)) else {
            throw Unexpected(what: "no work started")
        }
        let cut = result("cut")
        var produced = SharedResults.Produced(result: cut, lifetime: nil, revalidated: false)
        produced.completion = (budget, { _ in SharedResults.Produced(result: result("unused"), lifetime: nil, revalidated: false) })
        return (cut, machine.finish(key, flightID: flight, produced, now: at(4)))
    }

    @Test func theCutClipAnswersItsCallerAndTheWholeClipStartsUnderItsOwnBudget() throws {
        var machine = Machine(caching: ResultCaching())
        let (cut, action) = try Self.cutClip(&machine)
        #expect(action.answers.map(\.waiter) == ["first"] && action.answers.first?.status == .miss)
        let (_, work) = try #require(action.completion, "the whole clip is started")
        let budget = (work.deadline - Self.at(4)).seconds
        // Exactly: the machine reads no clock, so the budget runs from the instant it was given.
        #expect(budget == 120, "its own budget (\(budget) s), not the caller's 5 s")
        #expect(machine.count == 1, "the cut clip is kept while the whole one is made")
        #expect(machine.hit(Self.key, now: Self.at(5)) == nil, "but it is never a hit on its own")
        _ = cut
    }

    @Test func aCallerThatArrivesMeanwhileWaitsForTheWholeClipAndGetsTheCutOneAtItsDeadline() throws {
        var machine = Machine(caching: ResultCaching())
        let (cut, action) = try Self.cutClip(&machine)
        let (wholeID, work) = try #require(action.completion)
        let late = machine.newWaiter()
        guard case .wait = machine.lookup(Self.key, waiterID: late, "late", deadline: Self.at(10), fairnessID: 1,
                                          cancelled: false, now: Self.at(6)) else {
            throw Unexpected(what: "the late caller did not join the running whole clip (a second transcode)")
        }
        #expect(work.deadline > Self.at(100), "a caller does not move the whole clip's budget")
        // Its deadline: it leaves with the cut clip; the whole clip goes on.
        switch machine.leave(Self.key, waiterID: late, staysAtCancel: { _ in false }) {
        case .answer(let waiter, let delivery):
            #expect(waiter == "late" && delivery.result === cut && delivery.status == .hit)
        default:
            Issue.record("the late caller got no best attempt")
        }
        // A caller that is still there when it ends gets the whole clip, which then replaces the cut one.
        let patient = machine.newWaiter()
        guard case .wait = machine.lookup(Self.key, waiterID: patient, "patient", deadline: Self.at(60), fairnessID: 2,
                                          cancelled: false, now: Self.at(20)) else { throw Unexpected(what: "no join") }
        let whole = Self.result("whole")
        let done = machine.finish(Self.key, flightID: wholeID, .init(result: whole, lifetime: .seconds(600), revalidated: false), now: Self.at(40))
        #expect(done.answers.map(\.waiter) == ["patient"] && done.answers.first?.status == .coalesced)
        #expect(done.release.contains { $0 === cut }, "the cut clip is let go")
        #expect(done.completion == nil, "a whole clip is not started twice")
        #expect(machine.hit(Self.key, now: Self.at(41)) === whole, "later calls get the whole clip")
    }

    @Test func aWholeClipThatFailsLeavesNothingBehindAndTheNextCallStartsAfresh() throws {
        var machine = Machine(caching: ResultCaching())
        let (cut, action) = try Self.cutClip(&machine)
        let (wholeID, _) = try #require(action.completion)
        let failed = Self.result("failed")
        let done = machine.finish(Self.key, flightID: wholeID, .init(result: failed, lifetime: nil, revalidated: false), now: Self.at(30))
        #expect(done.release.contains { $0 === cut })
        #expect(machine.count == 0)
        guard case .startWork = machine.lookup(Self.key, waiterID: machine.newWaiter(), "next", deadline: Self.at(40), fairnessID: 3,
                                               cancelled: false, now: Self.at(31)) else {
            throw Unexpected(what: "no fresh work after a failed whole clip")
        }
    }

    @Test func noWholeClipStartsOnceThePipelineShutsDown() throws {
        var machine = Machine(caching: ResultCaching())
        let first = machine.newWaiter()
        guard case .startWork(let flight, _, _) = machine.lookup(Self.key, waiterID: first, "first", deadline: Self.at(5), fairnessID: 0,
                                                                 cancelled: false, now: Self.at(0)) else { throw Unexpected(what: "no work") }
        _ = machine.removeAll()
        var produced = SharedResults.Produced(result: Self.result("cut"), lifetime: nil, revalidated: false)
        produced.completion = (.seconds(120), { _ in SharedResults.Produced(result: Self.result("unused"), lifetime: nil, revalidated: false) })
        let action = machine.finish(Self.key, flightID: flight, produced, now: Self.at(4))
        #expect(action.completion == nil && machine.count == 0)
        #expect(action.answers.map(\.waiter) == ["first"], "its caller is still answered")
    }

    @Test func withoutACacheNoWholeClipIsMade() throws {
        var uncached = Machine(caching: nil)
        #expect(try Self.cutClip(&uncached).action.completion == nil)
        #expect(uncached.count == 0)
    }
}
