import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

extension DeadlineBoundSuites {
    /// The time contract. Bounds are generous (300 ms) because CI machines are noisy; the real
    /// figures come from the benchmarks.
    // Serialized: the tests time batches against their deadlines (the time contract).
    @Suite(.serialized) struct DeadlineTests {
        @Test("batchReturnsByItsDeadlineKeepingWhatFinished, within 300 ms of slack") func batchReturnsByItsDeadlineKeepingWhatFinished() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    let requests = ["media/photo.jpg", "stall/photo.jpg", "media/tone.mp3", "stall/clip.mp4"].map {
                        AttachmentRequest(url: "\(server.baseURL)/\($0)")
                    }
                    let started = ContinuousClock.now
                    let batch = await pipeline.process(requests, deadline: .seconds(1))
                    let elapsed = ContinuousClock.now - started
                    #expect(elapsed >= .seconds(1) - .milliseconds(5))
                    #expect(elapsed < .seconds(1) + timingSlack, "took \(elapsed)")
                    #expect(batch.attachments.map(\.status) == [.ready, .timedOut, .ready, .timedOut])
                    #expect(batch.attachments[1].reason?.code == .deadlineExceeded)
                    #expect(batch.attachments[3].reason?.code == .deadlineExceeded)
                    // Partial bodies are gone; the finished ones are kept.
                    let directory = try #require(batch.directory)
                    let name = (directory as NSString).lastPathComponent
                    #expect(scratch.tree() == [name, "\(name)/attachment-0.jpg", "\(name)/attachment-0.thumb.jpg", "\(name)/attachment-2.mp3"])
                }
            }
        }

        /// The deadline is an instant of the pipeline's clock: moved on by hand, it fires with no
        /// time passing, for the running transfer and the queued one alike, while libcurl's own
        /// timeouts (real time, a minute here) have not.
        @Test func theBatchDeadlineIsReadFromThePipelinesClock() async throws {
            let scratch = Scratch()
            let clock = ManualClock()
            try await withPipeline(scratch, {
                $0.clock = clock.clock
                $0.maxConcurrentTransfers = 1
                $0.timeout.stall = .seconds(60)
            }) { pipeline in
                try await withMediaServer { server in
                    // Both stall, so that whichever is queued first, one runs and one waits.
                    let requests = (0..<2).map { AttachmentRequest(url: "\(server.baseURL)/stall/photo.jpg?n=\($0)") }
                    let batch = Task { await pipeline.process(requests, deadline: .seconds(20)) }
                    try await waitUntil("one transfer running, one queued") { pipeline.transfersInFlight == (1, 1) }
                    #expect(clock.sleeping >= 1, "the deadline sentinel waits on the pipeline's clock")
                    clock.advance(by: .seconds(19))
                    // `advance` wakes what is due before it returns: a sentinel still asleep was not due.
                    #expect(clock.sleeping >= 1, "not yet: a second is left")
                    #expect(pipeline.transfersInFlight == (1, 1), "not yet: a second is left")
                    clock.advance(by: .seconds(1))
                    let attachments = await batch.value.attachments
                    #expect(attachments.map(\.reason?.code) == [.deadlineExceeded, .deadlineExceeded])
                    let queued = attachments.filter { $0.reason?.message.contains("queued") == true }
                    #expect(queued.count == 1, "\(attachments.map { $0.reason?.message ?? "" })")
                    #expect(scratch.tree().count <= 1, "no body left: \(scratch.tree())")
                }
            }
        }

        @Test("stallDetectionIsAPerRequestTimeout, within 300 ms of slack") func stallDetectionIsAPerRequestTimeout() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.timeout.stall = .milliseconds(500) }) { pipeline in
                try await withMediaServer { server in
                    let started = ContinuousClock.now
                    let d = await fetchOne("\(server.baseURL)/stall/photo.jpg", pipeline, deadline: .seconds(10))
                    let elapsed = ContinuousClock.now - started
                    #expect(d.status == .timedOut)
                    #expect(d.reason?.code == .timeout)
                    #expect(d.reason?.message.contains("no data") == true)
                    #expect(elapsed >= .milliseconds(500) && elapsed < .milliseconds(500) + timingSlack, "took \(elapsed)")
                    #expect(scratch.tree() == [])
                }
            }
        }

        @Test("stallDetectionWorksOnAReusedKeepAliveConnection, within 300 ms of slack") func stallDetectionWorksOnAReusedKeepAliveConnection() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, {
                $0.timeout.stall = .milliseconds(500)
                $0.maxConcurrentTransfers = 1
            }) { pipeline in
                try await withMediaServer { server in
                    let first = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline)
                    #expect(first.status == .ready)
                    let started = ContinuousClock.now
                    let stalled = await fetchOne("\(server.baseURL)/stall/photo.jpg", pipeline, deadline: .seconds(5))
                    let elapsed = ContinuousClock.now - started
                    #expect(server.acceptedConnections == 1) // the second request reused the connection
                    #expect(stalled.reason?.code == .timeout, "\(stalled.reason?.message ?? "")")
                    #expect(elapsed < .milliseconds(500) + timingSlack, "took \(elapsed)")
                }
            }
        }

        @Test("totalRequestTimeoutFires, within 300 ms of slack") func totalRequestTimeoutFires() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.timeout.request = .milliseconds(700) }) { pipeline in
                try await withMediaServer { server in
                    let started = ContinuousClock.now
                    let d = await fetchOne("\(server.baseURL)/stall/clip.mp4", pipeline, deadline: .seconds(10))
                    let elapsed = ContinuousClock.now - started
                    #expect(d.reason?.code == .timeout, "\(d.reason?.message ?? "")")
                    #expect(elapsed >= .milliseconds(690) && elapsed < .milliseconds(700) + timingSlack, "took \(elapsed)")
                }
            }
        }

        @Test("requestTimeoutIsClippedToTheDeadline, within 300 ms of slack") func requestTimeoutIsClippedToTheDeadline() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in // 10 s request timeout, 3 s stall
                try await withMediaServer { server in
                    let started = ContinuousClock.now
                    let d = await fetchOne("\(server.baseURL)/stall/photo.jpg", pipeline, deadline: .milliseconds(600))
                    let elapsed = ContinuousClock.now - started
                    #expect(d.reason?.code == .deadlineExceeded)
                    #expect(elapsed < .milliseconds(600) + timingSlack, "took \(elapsed)")
                }
            }
        }

        @Test("cancellingTheTaskReturnsPromptlyWithCancelledDescriptors, within 300 ms of slack") func cancellingTheTaskReturnsPromptlyWithCancelledDescriptors() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.maxConcurrentTransfers = 2 }) { pipeline in
                try await withMediaServer { server in
                    let requests = (0..<4).map { AttachmentRequest(url: "\(server.baseURL)/stall/clip.mp4?n=\($0)") }
                    let task = Task { await pipeline.process(requests, deadline: .seconds(20)) }
                    try await waitUntil("two transfers connected, two queued") {
                        pipeline.transfersInFlight == (2, 2) && server.acceptedConnections == 2
                    }
                    let cancelled = ContinuousClock.now
                    task.cancel()
                    let batch = await task.value
                    #expect(ContinuousClock.now - cancelled < timingSlack)
                    #expect(batch.attachments.count == 4)
                    #expect(batch.attachments.allSatisfy { $0.reason?.code == .cancelled && $0.status == .failed })
                    #expect(scratch.tree() == [])
                }
            }
        }

        @Test func queuedRequestsDoNotConnectAndExpireAtTheDeadline() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.maxConcurrentTransfers = 2 }) { pipeline in
                try await withMediaServer { server in
                    let requests = (0..<5).map { AttachmentRequest(url: "\(server.baseURL)/stall/photo.jpg?n=\($0)") }
                    let batch = await pipeline.process(requests, deadline: .milliseconds(800))
                    #expect(batch.attachments.allSatisfy { $0.reason?.code == .deadlineExceeded })
                    #expect(batch.attachments.filter { $0.reason?.message.contains("queued") == true }.count == 3)
                    #expect(server.acceptedConnections == 2)
                }
            }
        }

        @Test func concurrencyLimitIsSharedByConcurrentBatches() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.maxConcurrentTransfers = 3 }) { pipeline in
                try await withMediaServer { server in
                    func stalledBatch(_ batchIndex: Int, deadline: Duration) async {
                        let requests = (0..<8).map { AttachmentRequest(url: "\(server.baseURL)/stall/photo.jpg?b=\(batchIndex)&n=\($0)") }
                        let batch = await pipeline.process(requests, deadline: deadline)
                        #expect(batch.attachments.allSatisfy { $0.status == .timedOut })
                    }
                    // The first batch takes the three slots and keeps them until its deadline; the other
                    // three batches start once it holds them and end before it. Their requests can only
                    // queue: with a limit per batch (or none) they would open connections of their own.
                    // (Deadlines that end in a different order would let a later batch take the slots
                    // the first one frees, which is sharing too but makes the count depend on timing.)
                    async let first: Void = stalledBatch(0, deadline: .milliseconds(2_500))
                    let waitStarted = ContinuousClock.now
                    while server.acceptedConnections < 3, ContinuousClock.now - waitStarted < .seconds(1) {
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    #expect(server.acceptedConnections == 3, "the first batch did not take the three slots in time")
                    await withTaskGroup(of: Void.self) { group in
                        for batchIndex in 1..<4 {
                            group.addTask { await stalledBatch(batchIndex, deadline: .milliseconds(700)) }
                        }
                    }
                    await first
                    #expect(server.peakConnections <= 3)
                    #expect(server.acceptedConnections == 3)
                }
            }
        }

        @Test func manyConcurrentBatchesAllGetTheirOwnResults() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    let files = ["photo.jpg", "tone.mp3", "clip.mp4", "document.pdf", "alpha.png"]
                    await withTaskGroup(of: Void.self) { group in
                        for batchIndex in 0..<20 {
                            group.addTask {
                                let requests = files.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)?b=\(batchIndex)") }
                                let batch = await pipeline.process(requests)
                                #expect(batch.attachments.map(\.url) == requests.map(\.url))
                                #expect(batch.attachments.map(\.status) == [.ready, .ready, .ready, .rejected, .ready])
                            }
                        }
                    }
                }
            }
        }
    }
}
