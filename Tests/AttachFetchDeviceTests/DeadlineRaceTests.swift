import AttachFetchDevice
@testable import DeadlineRace
import EncryptedContent
import Foundation
import LoopbackHTTPServer
import Testing

/// `Deadline.race`, the one race the pipeline's batches and the device's fetcher run under,
/// and the fetcher's answers at the edges: nothing to fetch, a deadline in the far future or
/// in the past.
///
/// The device's deadline is a `Date`, with no clock to inject: these run on the real clock.
/// Where a test bounds how long something took, the bound is what it tells apart (answered at
/// once, or at the deadline, against waiting for a job that sleeps 20 s or more), with the
/// slack in the test's name: on a busy machine the cooperative pool's threads can be held by
/// other tests' blocking work for seconds.
@Suite struct DeadlineRaceTests {
    static func elapsed(_ work: () async throws -> Void) async rethrows -> Duration {
        let start = ContinuousClock.now
        try await work()
        return .now - start
    }

    @Test("noJobsAnswerAtOnceAndTheSentinelNeverStarts, within 10 s of slack (the sentinel would sleep 20 s)")
    func noJobsAnswerAtOnceAndTheSentinelNeverStarts() async {
        let started = Flag()
        let took = await Self.elapsed {
            await Deadline.race([@Sendable () async -> Int](), waitForDeadline: {
                started.set()
                try? await Task.sleep(for: .seconds(20))
            }, each: { _, _ in Issue.record("no job, no result") })
        }
        #expect(took < .seconds(10), "\(took)")
        #expect(!started.isSet)
    }

    @Test func theLastJobDoneEndsTheRaceLongBeforeAFarDeadline() async {
        var results: [Int: Int] = [:]
        let took = await Self.elapsed {
            await Deadline.race([{ 1 }, { try? await Task.sleep(for: .milliseconds(50)); return 2 }],
                                until: .distantFuture, each: { results[$0] = $1 })
        }
        #expect(results == [0: 1, 1: 2])
        // Seconds of margin for a busy machine; the sentinel alone would sleep for a day.
        #expect(took < .seconds(10), "the sentinel is cancelled, not waited for: \(took)")
    }

    @Test("theDeadlineCancelsWhatIsStillRunningAndEachJobReturnsWhatItHas, within 10 s of slack (the job would sleep 30 s)")
    func theDeadlineCancelsWhatIsStillRunningAndEachJobReturnsWhatItHas() async {
        var results: [Int: String] = [:]
        let took = await Self.elapsed {
            await Deadline.race([
                { "done" },
                { (try? await Task.sleep(for: .seconds(30))) == nil ? "cancelled" : "slept" },
            ], until: Date().addingTimeInterval(0.3), each: { results[$0] = $1 })
        }
        #expect(results == [0: "done", 1: "cancelled"])
        // The race waits for the deadline (300 ms, less 10 of rounding between `Date` and the
        // monotonic clock), and cancels the job that would sleep 30 s.
        #expect(took >= .milliseconds(290) && took < .seconds(10), "\(took)")
    }

    @Test("aDeadlineInThePastHasComeAlready, within 2 s of slack",
          arguments: [Date.distantPast, Date(timeIntervalSince1970: 0), Date().addingTimeInterval(-1)])
    func aDeadlineInThePastHasComeAlready(deadline: Date) async {
        var came: Bool?
        let took = await Self.elapsed { came = await Deadline.sleep(until: deadline) }
        #expect(came == true)
        #expect(took < .seconds(2), "\(took)")
    }

    /// `distantFuture` (and beyond) would overflow a `UInt64` of nanoseconds: it is slept
    /// towards in steps of a day at most, and a cancellation still ends the wait at once.
    @Test("aFarDeadlineNeitherTrapsNorOutlivesACancellation, within 10 s of slack (the sleep would last a day)",
          arguments: [Date.distantFuture, Date(timeIntervalSinceReferenceDate: 1e300), Date(timeIntervalSinceReferenceDate: .infinity)])
    func aFarDeadlineNeitherTrapsNorOutlivesACancellation(deadline: Date) async throws {
        let now = Date()
        #expect(Deadline.nextStep(until: deadline, now: now) == UInt64(Deadline.longestSleep * 1e9))
        #expect((250_000_000...250_001_000).contains(Deadline.nextStep(until: now.addingTimeInterval(0.25), now: now) ?? 0))
        #expect(Deadline.nextStep(until: now, now: now) == nil)
        #expect(Deadline.nextStep(until: Date(timeIntervalSinceReferenceDate: .nan), now: now) == nil)
        let started = Flag()
        let sleeper = Task { started.set(); return await Deadline.sleep(until: deadline) }
        // Cancelled once it has begun (a cancellation before would end it at once too).
        while !started.isSet { try await Task.sleep(for: .milliseconds(1)) }
        let took = await Self.elapsed {
            sleeper.cancel()
            #expect(await sleeper.value == false, "cancelled, not come")
        }
        #expect(took < .seconds(10), "\(took)")
    }

    // MARK: The device's fetcher at the edges

    @Test("aNotificationWithoutMediaIsAnsweredWithAnEmptyListAtOnce, within 10 s of slack (the deadline is 20 s)")
    func aNotificationWithoutMediaIsAnsweredWithAnEmptyListAtOnce() async throws {
        let fetcher = EncryptedAttachmentFetcher(directory: try scratchDirectory())
        let userInfo: [AnyHashable: Any] = ["aps": ["alert": ["title": "No picture"], "mutable-content": 1]]
        var results: [Result<FetchedAttachment, DeviceFetchError>]?
        let took = try await Self.elapsed { results = try await fetcher.fetch(userInfo: userInfo, deadline: Date().addingTimeInterval(20)) }
        #expect(results?.isEmpty == true)
        #expect(took < .seconds(10), "\(took) under a 20 s deadline")
        print("no media: answered in \(took) under a 20 s deadline")
        // An empty attachments list is the same.
        let empty = try await Self.elapsed {
            _ = try await fetcher.fetch(userInfo: ["attach-fetch": ["v": 1, "attachments": [Any]()]], deadline: .distantFuture)
        }
        #expect(empty < .seconds(10), "\(empty)")
    }

    @Test("aDistantFutureDeadlineFetchesEverythingAndAPastOneEndsItAtOnce, within 5 s of slack (the slow origin answers in 10 s)")
    func aDistantFutureDeadlineFetchesEverythingAndAPastOneEndsItAtOnce() async throws {
        let key = randomKey()
        let plaintext = randomBytes(200_000)
        let object = try encrypt(plaintext, key: key, recordSize: 4_096)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer({ request, connection in
            // An origin that answers after 10 s (or when the client hangs up).
            if request.path == "/slow.bin", connection.sleepUnlessClosed(seconds: 10) { return serve(["/slow.bin": object])(request, connection) }
            serve(["/object.bin": object])(request, connection)
        }) { server in
            let fetcher = EncryptedAttachmentFetcher(directory: directory)
            let userInfo = notification([entry("photo", url: "\(server.baseURL)/object.bin", key: key, plaintext: plaintext)])
            var results: [Result<FetchedAttachment, DeviceFetchError>] = []
            let took = try await Self.elapsed { results = try await fetcher.fetch(userInfo: userInfo, deadline: .distantFuture) }
            let fetched = try #require(try results.first?.get())
            #expect(try Data(contentsOf: fetched.fileURL) == Data(plaintext))
            #expect(took < .seconds(10), "answered when done: \(took)")
            // A deadline already past, for an origin that answers in 10 s: nothing is fetched,
            // nothing is left, and the answer does not wait for the origin.
            let slow = notification([entry("photo", url: "\(server.baseURL)/slow.bin", key: key, plaintext: plaintext)])
            var late: [Result<FetchedAttachment, DeviceFetchError>] = []
            let lateTook = try await Self.elapsed { late = try await fetcher.fetch(userInfo: slow, deadline: .distantPast) }
            guard case .failure(let error) = late.first else { Issue.record("a fetch past its deadline succeeded"); return }
            #expect(error.code == .deadlineExceeded, "\(error)")
            #expect(lateTook < .seconds(5), "\(lateTook)")
            print("distantFuture: answered in \(took); a past deadline: in \(lateTook)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [fetched.fileURL.lastPathComponent])
        }
    }
}

/// A flag set from another task.
///
/// `@unchecked Sendable`: `value` is only read and written under `lock`.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
