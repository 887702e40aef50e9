import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

extension TimerBoundSuites {
    /// The time contract against a fault-injecting server on 127.0.0.1.
    // Serialized: each test times a misbehaving server against the stall, request and batch timeouts.
    @Suite(.serialized) struct HostileServerTests {
        @Test("serverThatNeverAnswersHitsTheStallTimeout, within 300 ms of slack") func serverThatNeverAnswersHitsTheStallTimeout() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.timeout.stall = .milliseconds(500) }) { pipeline in
                try await withMediaServer { server in
                    let (d, elapsed) = await timed("\(server.baseURL)/fault/silent", pipeline)
                    #expect(d.status == .timedOut && d.reason?.code == .timeout, "\(d.reason?.message ?? "")")
                    expectNear(elapsed, .milliseconds(500), "silent")
                    #expect(scratch.tree() == [])
                }
            }
        }

        @Test("headersThenStallHitsTheStallTimeout, within 300 ms of slack") func headersThenStallHitsTheStallTimeout() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.timeout.stall = .milliseconds(800) }) { pipeline in
                try await withMediaServer { server in
                    let (d, elapsed) = await timed("\(server.baseURL)/stall/clip.mp4", pipeline)
                    #expect(d.reason?.code == .timeout)
                    expectNear(elapsed, .milliseconds(800), "stall")
                }
            }
        }

        @Test("dripFeedHitsTheTotalTimeoutNotTheStallTimeout, within 300 ms of slack") func dripFeedHitsTheTotalTimeoutNotTheStallTimeout() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, {
                $0.timeout.request = .milliseconds(1500)
                $0.timeout.stall = .seconds(3) // a byte a second never looks stalled
            }) { pipeline in
                try await withMediaServer { server in
                    let (d, elapsed) = await timed("\(server.baseURL)/fault/drip", pipeline)
                    #expect(d.reason?.code == .timeout, "\(d.reason?.message ?? "")")
                    expectNear(elapsed, .milliseconds(1500), "drip")
                    #expect(scratch.tree() == [])
                }
            }
        }

        @Test("slowHeadersHitTheTotalTimeout, within 300 ms of slack") func slowHeadersHitTheTotalTimeout() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.timeout.request = .milliseconds(1200) }) { pipeline in
                try await withMediaServer { server in
                    let (d, elapsed) = await timed("\(server.baseURL)/fault/slow-headers", pipeline)
                    #expect(d.reason?.code == .timeout, "\(d.reason?.message ?? "")")
                    expectNear(elapsed, .milliseconds(1200), "slow headers")
                }
            }
        }

        @Test("slowHeadersHitTheStallTimeoutWhenItIsShorter, within 300 ms of slack") func slowHeadersHitTheStallTimeoutWhenItIsShorter() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.timeout.stall = .milliseconds(400) }) { pipeline in
                try await withMediaServer { server in
                    let (d, elapsed) = await timed("\(server.baseURL)/fault/slow-headers", pipeline)
                    #expect(d.reason?.code == .timeout)
                    #expect(d.reason?.message.contains("no data") == true)
                    expectNear(elapsed, .milliseconds(400), "slow headers, stall")
                }
            }
        }

        @Test func endlessBodyIsCutOffAtTheSniffedKindsLimit() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.sizeLimits.video = 3_000_000 }) { pipeline in
                try await withMediaServer { server in
                    let (d, _) = await timed("\(server.baseURL)/fault/endless?name=clip.mp4", pipeline)
                    #expect(d.reason?.code == .sizeLimitExceeded)
                    #expect(d.kind == .video)
                    let (image, _) = await timed("\(server.baseURL)/fault/endless?name=photo.jpg", pipeline)
                    #expect(image.reason?.code == .sizeLimitExceeded)
                    #expect(scratch.tree() == [])
                }
            }
        }

        @Test func contentLengthLongerThanTheBodyIsATransferFailure() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    let (d, elapsed) = await timed("\(server.baseURL)/fault/long-length?name=tone.wav", pipeline)
                    #expect(d.status == .failed && d.reason?.code == .transferFailed, "\(d.reason?.message ?? "")")
                    #expect(elapsed < .seconds(1))
                    #expect(scratch.tree() == [])
                }
            }
        }

        @Test func contentLengthShorterThanTheBodyKeepsOnlyTheDeclaredBytes() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
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
        }

        @Test func resetMidBodyIsATransferFailure() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    let (d, elapsed) = await timed("\(server.baseURL)/fault/reset?name=clip.avi", pipeline)
                    #expect(d.reason?.code == .transferFailed, "\(d.reason?.message ?? "")")
                    #expect(elapsed < .seconds(1))
                    #expect(scratch.tree() == [])
                }
            }
        }

        @Test func redirectLoopIsTooManyRedirects() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    let (d, _) = await timed("\(server.baseURL)/fault/redirect-loop", pipeline)
                    #expect(d.reason?.code == .tooManyRedirects)
                    #expect(server.requestLog.count == 6) // the first request and five redirects
                }
            }
        }

        @Test func oneBatchsStallsDoNotStarveAnotherBatch() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, {
                $0.maxConcurrentTransfers = 4
                $0.timeout.stall = .milliseconds(500)
            }) { pipeline in
                try await withMediaServer { server in
                    // Batch A queues 16 stalling requests: first come, first served, it would hold all four
                    // slots for four rounds of 500 ms. Batch B arrives just after with four good requests.
                    async let hostile = pipeline.process((0..<16).map { AttachmentRequest(url: "\(server.baseURL)/fault/silent?n=\($0)") },
                                                         deadline: .seconds(5))
                    // B arrives once A holds the four slots with at least two rounds still queued
                    // (twelve at first, eight after the first stall timeout).
                    try await waitUntil("batch A's stalls to hold the four slots with more queued") {
                        let inFlight = pipeline.transfersInFlight
                        return inFlight.running == 4 && inFlight.queued >= 8
                    }
                    let good = await pipeline.process((0..<4).map { AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?n=\($0)") },
                                                      deadline: .seconds(5))
                    #expect(good.attachments.allSatisfy { $0.status == .ready })
                    // B waits for a slot only until the first ones free (one stall timeout, 500 ms), not
                    // for A's whole queue (four rounds, 2 s) nor for a second round (1 s). Its slot
                    // waits, not its wall time: its decodes take longer on a busy machine.
                    let queued = good.attachments.map { $0.timings.queued ?? 0 }
                    #expect(queued.allSatisfy { $0 < 1_000 }, "batch B waited \(queued) ms for slots")
                    let a = await hostile
                    #expect(a.attachments.allSatisfy { $0.reason?.code == .timeout })
                }
            }
        }
    }
}
