import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

/// The transfer limits over real sockets: the per-host cap counted at the origin, slots shared
/// between hosts, the bytes-in-flight budget, and connections kept across batches.
@Suite struct TransferLimitTests {
    @Test func noMoreConnectionsToOneHostThanItsCap() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.maxConcurrentTransfers = 64; $0.maxHostConnections = 3 }) { pipeline in
            try await withMediaServer { server in
                // Each answer takes 300 ms, so that twelve requests overlap if nothing holds them.
                let requests = (0..<12).map { AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?delayMs=300&n=\($0)") }
                let batch = await pipeline.process(requests)
                #expect(batch.attachments.allSatisfy { $0.status == .ready })
                #expect(server.peakConnections == 3, "peak \(server.peakConnections) connections to one host with a cap of 3")
                // Those waiting for the host waited in the queue, where it shows: the last of four
                // rounds at least one round (a loaded machine may enqueue it late, never early).
                #expect(batch.attachments.contains { ($0.timings.queued ?? 0) >= 300 })
                Self.expectTimingsAddUp(batch.attachments)
            }
        }
    }

    @Test func aSlowHostDoesNotHoldEverySlotWhileAnotherHostWaits() async throws {
        let scratch = Scratch()
        // Two slots, and the slow host may use both: only sharing between hosts lets the other in.
        try await withPipeline(scratch, { $0.maxConcurrentTransfers = 2; $0.maxHostConnections = 2 }) { pipeline in
            try await withMediaServer { slow in
                try await withMediaServer { fast in
                    let slowURLs = (0..<8).map { AttachmentRequest(url: "\(slow.baseURL)/media/photo.jpg?delayMs=800&n=\($0)") }
                    // Two transfers hold both slots; six more for the slow host and one for the
                    // other queue behind them, the other host's last.
                    let blocking = Array(slowURLs[6...])
                    async let blockers = pipeline.process(blocking, deadline: .seconds(20))
                    try await waitUntil { slow.openConnections == 2 }
                    let batch = await pipeline.process(Array(slowURLs[..<6]) + [AttachmentRequest(url: "\(fast.baseURL)/media/photo.jpg")],
                                                       deadline: .seconds(20))
                    #expect(await blockers.attachments.allSatisfy { $0.status == .ready })
                    #expect(batch.attachments.allSatisfy { $0.status == .ready })
                    // In queue order it would wait four rounds of 800 ms; with the hosts sharing,
                    // it takes the second slot that frees, at the end of the first round.
                    let waited = batch.attachments[6].timings.queued ?? .max
                    #expect(waited < 1_600, "the other host's transfer waited \(waited) ms for a slot")
                    // Counted in requests being answered: the connection count can include, for a
                    // moment, one libcurl closed from its idle cache just before connecting again.
                    #expect(slow.peakRequestsInService == 2)
                }
            }
        }
    }

    @Test func bytesInFlightStayWithinTheBudgetAndWaitingBodiesStillFinish() async throws {
        let scratch = Scratch()
        let media = Scratch()
        // Real photos of a few hundred KB, each body a third to a half of the budget.
        try writeNoiseImage(path: "\(media.path)/noise.jpg", width: 330, height: 330)
        let size = fileSize("\(media.path)/noise.jpg")
        let budget: Int64 = 1 << 20
        #expect(size > budget / 4 && size < budget / 2, "noise.jpg is \(size) bytes")
        try await withPipeline(scratch, {
            $0.sizeLimits = .init(image: budget, audio: budget, video: budget, imageSource: budget)
            $0.maxInflightBytes = budget
            $0.maxConcurrentTransfers = 16
        }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                // Sent in 16 KiB chunks 2 ms apart, so that bodies overlap; some without a
                // Content-Length, which reserve the whole largest limit.
                let requests = (0..<10).map {
                    AttachmentRequest(url: "\(server.baseURL)/media/noise.jpg?chunk=16384&n=\($0)\($0 % 3 == 0 ? "&length=none" : "")")
                }
                let batch = await pipeline.process(requests, deadline: .seconds(30))
                #expect(batch.attachments.allSatisfy { $0.status == .ready }, "\(batch.attachments.map { $0.reason?.message ?? "ready" })")
                let peak = pipeline.originConnections.peakInflightBytes
                #expect(peak > 0 && peak <= budget, "peak bytes in temporary files \(peak), budget \(budget)")
                // The budget did bind: bodies waited for it, and that wait is in `queued`, once.
                #expect(batch.attachments.contains { ($0.timings.queued ?? 0) > 0 })
                Self.expectTimingsAddUp(batch.attachments)
            }
        }
    }

    @Test func connectionsAreKeptAndReusedAcrossBatches() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let first = await pipeline.process((0..<4).map { AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?n=\($0)") })
                #expect(first.attachments.allSatisfy { $0.status == .ready })
                let accepted = server.acceptedConnections
                #expect(accepted >= 1 && accepted <= 4)
                let second = await pipeline.process((4..<8).map { AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?n=\($0)") })
                #expect(second.attachments.allSatisfy { $0.status == .ready })
                // One at a time, the second batch's transfers find the first batch's connections.
                let third = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg?n=9")])
                #expect(third.attachments[0].status == .ready)
                #expect(server.acceptedConnections <= 4, "\(server.acceptedConnections) connections for three batches to one host")
                let counts = pipeline.originConnections
                #expect(counts.opened == server.acceptedConnections && counts.reused >= 5, "\(counts)")
            }
        }
    }

    /// docs/descriptor.md#timings: `queued` and `download` are disjoint parts of `total`, and
    /// `connect` ≤ `firstByte` ≤ `download` (each figure rounded down to a millisecond).
    static func expectTimingsAddUp(_ attachments: [AttachmentDescriptor], sourceLocation: SourceLocation = #_sourceLocation) {
        for timings in attachments.map(\.timings) {
            let queued = timings.queued ?? 0, download = timings.download ?? 0
            #expect(queued + download <= timings.total + 2, "queued \(queued) + download \(download) > total \(timings.total)",
                    sourceLocation: sourceLocation)
            if let connect = timings.connect, let firstByte = timings.firstByte {
                #expect(connect <= firstByte && firstByte <= download + 2, "\(timings)", sourceLocation: sourceLocation)
            }
        }
    }
}
