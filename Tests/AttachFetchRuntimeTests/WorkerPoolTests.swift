import AttachFetchCore
import AttachFetchRuntime
import Foundation
import Testing
import TestHelpers
#if canImport(Glibc)
import Glibc
#endif

/// The threads for blocking work (`WorkerPool`, `BlockingWork`) alone, with slots that are
/// nothing but the name of the thread that made them: no decoder, no pipeline.
@Suite struct WorkerPoolTests {
    /// What a pool thread hands its jobs: made on that thread, it remembers the thread's name.
    final class NamedSlot: Sendable {
        let thread: String
        init(thread: String) { self.thread = thread }
    }

    /// The calling thread's name, as the kernel keeps it (`nameCurrentThread`).
    static func threadName() -> String {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .newlines) ?? "?"
    }

    static func pool(threads: Int) -> WorkerPool<NamedSlot> {
        WorkerPool(threads: threads, name: "af-test", makeSlot: { NamedSlot(thread: threadName()) },
                   stoppedSlot: { NamedSlot(thread: "stopped") })
    }

    @Test func eachJobRunsOnAPoolThreadWithThatThreadsOwnSlot() async throws {
        let pool = Self.pool(threads: 2)
        defer { pool.stop() }
        let runs = await withTaskGroup(of: (slot: String, thread: String).self) { group in
            for _ in 0..<40 {
                group.addTask { await pool.run { slot in (slot.thread, Self.threadName()) } }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(runs.count == 40)
        for run in runs {
            #expect(run.slot == run.thread, "a job on \(run.thread) got the slot of \(run.slot)")
            #expect(["af-test-0", "af-test-1"].contains(run.thread), "a job ran on \(run.thread), not a pool thread")
        }
        #expect(pool.jobsStarted == 40)
    }

    /// A thrown error comes back to the caller as it was thrown.
    @Test func aJobsErrorReachesItsCaller() async {
        struct Refused: Error, Equatable { let why: String }
        let pool = Self.pool(threads: 1)
        defer { pool.stop() }
        await #expect(throws: Refused(why: "on a pool thread")) {
            try await pool.run { (_: NamedSlot) throws(Refused) -> Int in throw Refused(why: "on a pool thread") }
        }
    }

    /// `stop` returns once every job queued before it has run and every thread has ended; a job
    /// submitted afterwards runs at once, on the submitting thread, with the stopped slot.
    @Test func stopFinishesWhatWasQueuedThenRunsLateJobsInPlace() async throws {
        let pool = Self.pool(threads: 1)
        let done = Locked(0)
        for _ in 0..<10 {
            pool.submit { _ in
                usleep(2_000)
                done.withLock { $0 += 1 }
            }
        }
        let late = try await offPool { () -> (slot: String, ranBeforeSubmitReturned: Bool) in
            pool.stop()
            let ran = Locked<String?>(nil)
            pool.submit { slot in ran.withLock { $0 = slot.thread } }
            return (ran.withLock { $0 } ?? "not run", ran.withLock { $0 } != nil)
        }
        #expect(done.withLock { $0 } == 10, "stop returned with \(10 - done.withLock { $0 }) queued jobs not run")
        #expect(late.ranBeforeSubmitReturned && late.slot == "stopped", "\(late)")
    }

    /// The pace the transfer engine follows is unknown until a thread has finished a job past
    /// its first (which pays for the thread's start), then the threads over one job's time.
    @Test func thePaceIsUnknownUntilAThreadsSecondJob() async {
        let pool = Self.pool(threads: 1)
        defer { pool.stop() }
        _ = await pool.run { _ in usleep(1_000) }
        #expect(pool.jobsPerSecond == nil)
        _ = await pool.run { _ in usleep(20_000) }
        // `run` returns when the job does, before its thread records the time; the one thread
        // takes the next job only after recording, so a third job orders the read after it.
        _ = await pool.run { _ in usleep(20_000) }
        let pace = pool.jobsPerSecond
        // One thread over jobs of at least 20 ms: at most 50 a second.
        #expect(pace.map { $0 > 0 && $0 <= 50 } == true, "\(pace ?? -1) jobs a second")
    }

    /// Blocking work that belongs to no pipeline runs on threads of its own, never on the
    /// cooperative pool.
    @Test func blockingWorkRunsOnItsOwnThreads() async {
        let thread = await BlockingWork.run { Self.threadName() }
        #expect(thread.hasPrefix("af-blocking-"), "\(thread)")
    }
}
