import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

/// The time contract against a fault-injecting server on 127.0.0.1.
@Suite struct HostileServerTests {
    static let slack = DeadlineTests.slack

    /// Runs one URL and returns its descriptor and how long the batch took.
    func timed(_ url: String, _ pipeline: AttachmentPipeline, deadline: Duration = .seconds(20)) async -> (AttachmentDescriptor, Duration) {
        let started = ContinuousClock.now
        let d = await fetchOne(url, pipeline, deadline: deadline)
        return (d, ContinuousClock.now - started)
    }

    func expectNear(_ elapsed: Duration, _ setting: Duration, _ what: String) {
        #expect(elapsed >= setting - .milliseconds(5), "\(what): \(elapsed) is before \(setting)")
        #expect(elapsed < setting + Self.slack, "\(what): \(elapsed) is late for \(setting)")
    }

    @Test func serverThatNeverAnswersHitsTheStallTimeout() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch) { $0.timeout.stall = .milliseconds(500) }
        try await withMediaServer { server in
            let (d, elapsed) = await timed("\(server.baseURL)/fault/silent", pipeline)
            #expect(d.status == .timedOut && d.reason?.code == .timeout, "\(d.reason?.message ?? "")")
            expectNear(elapsed, .milliseconds(500), "silent")
            #expect(scratch.tree() == [])
        }
    }

    @Test func headersThenStallHitsTheStallTimeout() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch) { $0.timeout.stall = .milliseconds(800) }
        try await withMediaServer { server in
            let (d, elapsed) = await timed("\(server.baseURL)/stall/clip.mp4", pipeline)
            #expect(d.reason?.code == .timeout)
            expectNear(elapsed, .milliseconds(800), "stall")
        }
    }

    @Test func dripFeedHitsTheTotalTimeoutNotTheStallTimeout() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch) {
            $0.timeout.request = .milliseconds(1500)
            $0.timeout.stall = .seconds(3) // a byte a second never looks stalled
        }
        try await withMediaServer { server in
            let (d, elapsed) = await timed("\(server.baseURL)/fault/drip", pipeline)
            #expect(d.reason?.code == .timeout, "\(d.reason?.message ?? "")")
            expectNear(elapsed, .milliseconds(1500), "drip")
            #expect(scratch.tree() == [])
        }
    }

    @Test func slowHeadersHitTheTotalTimeout() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch) { $0.timeout.request = .milliseconds(1200) }
        try await withMediaServer { server in
            let (d, elapsed) = await timed("\(server.baseURL)/fault/slow-headers", pipeline)
            #expect(d.reason?.code == .timeout, "\(d.reason?.message ?? "")")
            expectNear(elapsed, .milliseconds(1200), "slow headers")
        }
    }

    @Test func slowHeadersHitTheStallTimeoutWhenItIsShorter() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch) { $0.timeout.stall = .milliseconds(400) }
        try await withMediaServer { server in
            let (d, elapsed) = await timed("\(server.baseURL)/fault/slow-headers", pipeline)
            #expect(d.reason?.code == .timeout)
            #expect(d.reason?.message.contains("no data") == true)
            expectNear(elapsed, .milliseconds(400), "slow headers, stall")
        }
    }

    @Test func endlessBodyIsCutOffAtTheSniffedKindsLimit() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch) { $0.sizeLimits.video = 3_000_000 }
        try await withMediaServer { server in
            let (d, _) = await timed("\(server.baseURL)/fault/endless?name=clip.mp4", pipeline)
            #expect(d.reason?.code == .sizeLimitExceeded)
            #expect(d.kind == .video)
            let (image, _) = await timed("\(server.baseURL)/fault/endless?name=photo.jpg", pipeline)
            #expect(image.reason?.code == .sizeLimitExceeded)
            #expect(scratch.tree() == [])
        }
    }

    @Test func contentLengthLongerThanTheBodyIsATransferFailure() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch)
        try await withMediaServer { server in
            let (d, elapsed) = await timed("\(server.baseURL)/fault/long-length?name=tone.wav", pipeline)
            #expect(d.status == .failed && d.reason?.code == .transferFailed, "\(d.reason?.message ?? "")")
            #expect(elapsed < .seconds(1))
            #expect(scratch.tree() == [])
        }
    }

    @Test func contentLengthShorterThanTheBodyKeepsOnlyTheDeclaredBytes() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch)
        try await withMediaServer { server in
            // The image is cut at the declared length, so decoding proves it incomplete.
            let (d, _) = await timed("\(server.baseURL)/fault/short-length?name=photo.jpg", pipeline)
            #expect(d.reason?.code == .corruptMedia, "\(d.reason?.message ?? "")")
            // Audio cannot be decoded yet: it is delivered at exactly the declared length.
            let (wav, _) = await timed("\(server.baseURL)/fault/short-length?name=tone.wav", pipeline)
            #expect(wav.status == .ready)
            #expect(wav.bytes == fileSize("\(testMediaDirectory)/tone.wav") / 2)
        }
    }

    @Test func resetMidBodyIsATransferFailure() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch)
        try await withMediaServer { server in
            let (d, elapsed) = await timed("\(server.baseURL)/fault/reset?name=clip.avi", pipeline)
            #expect(d.reason?.code == .transferFailed, "\(d.reason?.message ?? "")")
            #expect(elapsed < .seconds(1))
            #expect(scratch.tree() == [])
        }
    }

    @Test func redirectLoopIsTooManyRedirects() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch)
        try await withMediaServer { server in
            let (d, _) = await timed("\(server.baseURL)/fault/redirect-loop", pipeline)
            #expect(d.reason?.code == .tooManyRedirects)
            #expect(server.requestLog.count == 6) // the first request and five redirects
        }
    }

    @Test func batchDeadlineHoldsWhenEveryTransferMisbehaves() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch) // default timeouts: 5 s, 10 s, 3 s stall
        try await withMediaServer { server in
            let paths = ["media/photo.jpg", "fault/silent", "fault/drip", "fault/slow-headers", "stall/clip.mp4", "media/tone.mp3"]
            let started = ContinuousClock.now
            let batch = await pipeline.process(paths.map { AttachmentRequest(url: "\(server.baseURL)/\($0)") },
                                               deadline: .milliseconds(1200))
            let elapsed = ContinuousClock.now - started
            expectNear(elapsed, .milliseconds(1200), "deadline")
            #expect(batch.attachments.map(\.status) == [.ready, .timedOut, .timedOut, .timedOut, .timedOut, .ready])
            #expect(batch.attachments.filter { $0.status == .timedOut }.allSatisfy { $0.reason?.code == .deadlineExceeded })
        }
    }

    @Test func hundredStallingConnectionsAtOnceStillMeetTheDeadline() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch) { $0.maxConcurrentTransfers = 100 }
        try await withMediaServer { server in
            let requests = (0..<100).map { AttachmentRequest(url: "\(server.baseURL)/fault/silent?n=\($0)") }
            let started = ContinuousClock.now
            let batch = await pipeline.process(requests, deadline: .seconds(1))
            let elapsed = ContinuousClock.now - started
            expectNear(elapsed, .seconds(1), "100 stalls")
            #expect(batch.attachments.count == 100)
            #expect(batch.attachments.allSatisfy { $0.reason?.code == .deadlineExceeded })
            #expect(server.peakConnections == 100)
            #expect(scratch.tree() == [])
        }
    }

    @Test func oneBatchsStallsDoNotStarveAnotherBatch() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch) {
            $0.maxConcurrentTransfers = 4
            $0.timeout.stall = .milliseconds(500)
        }
        try await withMediaServer { server in
            // Batch A queues 16 stalling requests: first come, first served, it would hold all four
            // slots for four rounds of 500 ms. Batch B arrives just after with four good requests.
            async let hostile = pipeline.process((0..<16).map { AttachmentRequest(url: "\(server.baseURL)/fault/silent?n=\($0)") },
                                                 deadline: .seconds(5))
            try await Task.sleep(for: .milliseconds(100))
            let started = ContinuousClock.now
            let good = await pipeline.process((0..<4).map { AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?n=\($0)") },
                                              deadline: .seconds(5))
            let waited = ContinuousClock.now - started
            #expect(good.attachments.allSatisfy { $0.status == .ready })
            // B waits only for the first slots to free (one stall timeout), not for A's whole queue.
            #expect(waited < .milliseconds(500) + Self.slack, "batch B took \(waited)")
            let a = await hostile
            #expect(a.attachments.allSatisfy { $0.reason?.code == .timeout })
        }
    }

    @Test func fiftyConcurrentBatchesEachMeetTheirOwnDeadline() async throws {
        let scratch = Scratch()
        let pipeline = try makePipeline(scratch)
        try await withMediaServer { server in
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let deadline = Duration.milliseconds(400 + 20 * index)
                        let requests = ["media/photo.jpg", "fault/silent", "media/tone.mp3", "fault/drip"].map {
                            AttachmentRequest(url: "\(server.baseURL)/\($0)?b=\(index)")
                        }
                        let started = ContinuousClock.now
                        let batch = await pipeline.process(requests, deadline: deadline)
                        let elapsed = ContinuousClock.now - started
                        #expect(elapsed < deadline + Self.slack, "batch \(index): \(elapsed) for \(deadline)")
                        #expect(batch.attachments.count == 4)
                        #expect(batch.attachments[1].status == .timedOut && batch.attachments[3].status == .timedOut)
                    }
                }
            }
            #expect(scratch.tree().allSatisfy { !$0.contains(".part-") && !$0.contains(".thumb-") })
        }
    }
}
