import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch
@testable import AttachFetchTransfer

extension DeadlineBoundSuites {
    /// The transfer pace: its arithmetic on given instants (no sockets), and over real sockets,
    /// that a near origin's burst runs few transfers at once while a far origin's run together.
    // Serialized: the socket tests count concurrent connections, which a busy machine's slower
    // decodes and transfers move.
    @Suite(.serialized) struct TransferPaceTests {
        let t0 = ContinuousClock.now

        @Test func aFixedLimitStartsUpToTheCapAtOnce() {
            var pace = TransferPace(cap: 8, adaptive: false)
            #expect(pace.pace(decodeRate: 1000) == nil)
            #expect(pace.startable(now: t0, running: 0, decodeRate: nil) == 8)
            pace.started(8)
            #expect(pace.startable(now: t0, running: 5, decodeRate: 1000) == 3)
        }

        @Test func transfersStartAtTwiceTheDecodersPaceAfterABurst() {
            var pace = TransferPace(cap: 1024, adaptive: true)
            #expect(pace.pace(decodeRate: 1000) == 2000)
            // A burst of sixteen, then two a millisecond at 1,000 decodes a second.
            #expect(pace.startable(now: t0, running: 0, decodeRate: 1000) == TransferPace.burst)
            pace.started(16)
            #expect(pace.startable(now: t0, running: 16, decodeRate: 1000) == 0)
            // Fewer than the burst running (quick transfers that ended): as many more as make it up.
            #expect(pace.startable(now: t0, running: 3, decodeRate: 1000) == 13)
            #expect(pace.startable(now: t0 + .milliseconds(5), running: 16, decodeRate: 1000) == 10)
            pace.started(10)
            // Slower decoders, slower starts.
            #expect(pace.startable(now: t0 + .milliseconds(10), running: 26, decodeRate: 100) == 1)
            // Idle a long while: no more than the burst at once.
            #expect(pace.startable(now: t0 + .seconds(10), running: 0, decodeRate: 1000) == TransferPace.burst)
            // Never past the cap.
            #expect(pace.startable(now: t0 + .seconds(20), running: 1020, decodeRate: 1000) == 4)
        }

        @Test func beforeAnyDecodeEndsAJobIsTakenToCostTwoMillisecondsAThread() {
            let pace = TransferPace(cap: 1024, adaptive: true, decoderThreads: 3)
            #expect(pace.pace(decodeRate: nil) == 3_000)
            #expect(pace.pace(decodeRate: 0) == 3_000)
            #expect(pace.pace(decodeRate: 50) == 100)
        }

        @Test func aPoolsPaceIsItsThreadsOverAJobsBusyTimeWithoutEachThreadsFirstJob() async throws {
            let pool = BlockingPool(threads: 2, name: "af-pace")
            defer { pool.stop() }
            #expect(pool.jobsPerSecond == nil)
            let done = Locked(0)
            // Each thread's first job is slow, as a decoder worker's start is, and left out.
            for _ in 0..<2 { pool.submit { _ in usleep(200_000); done.withLock { $0 += 1 } } }
            try await waitUntil("the first jobs") { done.withLock { $0 } == 2 }
            #expect(pool.jobsPerSecond == nil)
            for _ in 0..<8 { pool.submit { _ in usleep(10_000); done.withLock { $0 += 1 } } }
            try await waitUntil("the later jobs") { done.withLock { $0 } == 10 }
            // Two threads over about 10 ms a job: about 200 a second. Counting the 200-ms jobs in
            // would leave the average near 75 ms (about 27 a second).
            let rate = try #require(pool.jobsPerSecond)
            #expect(rate > 80 && rate <= 200, "\(rate) jobs a second")
        }

        // MARK: Over real sockets

        @Test func aNearOriginsBurstRunsFewAtOnce() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                // Eight attachments first, so that the decoders' pace is measured (each thread's first
                // job is left out of it).
                try await withMediaServer { warm in
                    let first = await pipeline.process((0..<8).map { AttachmentRequest(url: "\(warm.baseURL)/media/photo.jpg?n=\($0)") })
                    #expect(first.attachments.allSatisfy { $0.status == .ready })
                }
                try await withMediaServer { server in
                    let requests = (0..<200).map { AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?n=\($0)") }
                    let batch = await pipeline.process(requests, deadline: .seconds(20))
                    #expect(batch.attachments.allSatisfy { $0.status == .ready })
                    // A fixed limit of 1,024 (512 per host) opened 200 connections at once.
                    #expect(server.peakConnections < 100, "peak \(server.peakConnections) connections for 200 quick transfers")
                    #expect(pipeline.transferPace != nil)
                }
            }
        }

        @Test func aFarOriginsTransfersRunTogether() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { warm in
                    let first = await pipeline.process((0..<4).map { AttachmentRequest(url: "\(warm.baseURL)/media/photo.jpg?n=\($0)") })
                    #expect(first.attachments.allSatisfy { $0.status == .ready })
                }
                try await withMediaServer { server in
                    // Each answer takes 1.5 s: transfers keep starting at the decoders' pace while the
                    // earlier ones wait, so many run at once.
                    let requests = (0..<100).map { AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?delayMs=1500&n=\($0)") }
                    let batch = await pipeline.process(requests, deadline: .seconds(20))
                    #expect(batch.attachments.allSatisfy { $0.status == .ready })
                    #expect(server.peakConnections > 2 * TransferPace.burst,
                            "peak \(server.peakConnections) connections to an origin 1.5 s away")
                }
            }
        }

        @Test func aFixedLimitHoldsEvenForAFarOrigin() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.maxConcurrentTransfers = 8; $0.transferConcurrency = .fixed }) { pipeline in
                try await withMediaServer { server in
                    let requests = (0..<24).map { AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?delayMs=300&n=\($0)") }
                    let batch = await pipeline.process(requests, deadline: .seconds(20))
                    #expect(batch.attachments.allSatisfy { $0.status == .ready })
                    #expect(server.peakConnections == 8)
                    #expect(pipeline.transferPace == nil)
                }
            }
        }
    }
}
