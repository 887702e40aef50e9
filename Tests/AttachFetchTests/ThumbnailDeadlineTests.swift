import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

extension DeadlineBoundSuites {
    // Serialized: the tests time batches against their deadlines (the time contract).
    @Suite(.serialized) struct ThumbnailDeadlineTests {
        @Test("thumbnailThatCannotFinishDegradesToNoThumbnailNotALateBatch, within 300 ms of slack") func thumbnailThatCannotFinishDegradesToNoThumbnailNotALateBatch() async throws {
            let media = Scratch()
            let scratch = Scratch()
            // One thumbnail thread and eight slow-to-decode images (about 0.25–0.8 s each here,
            // depending on the machine's state): the deadline comes while thumbnails are still
            // running or queued, after every download has finished.
            let batch = try await withPipeline(scratch, {
                $0.thumbnailThreads = 1
                $0.maxImagePixels = 100_000_000
                $0.maxProgressivePixels = 100_000_000 // slow on purpose: let it through to the decoder
                $0.cache = ResultCaching() // the second batch below asks for the same URLs
            }) { pipeline in
                let mediaPath = media.path
                try await offPool { try writeBlackJPEG(path: "\(mediaPath)/slow.jpg", width: 7000, height: 7000, progressive: true) }
                let routes = MediaRoutes(directory: media.path)
                let server = try LoopbackHTTPServer { request, connection in routes.handle(request, connection) }
                let requests = (0..<8).map { AttachmentRequest(url: "\(server.baseURL)/media/slow.jpg?n=\($0)", identifier: "slow\($0)") }
                let started = ContinuousClock.now
                let batch = await pipeline.process(requests, deadline: .milliseconds(800))
                let elapsed = ContinuousClock.now - started
                #expect(elapsed < .milliseconds(800) + timingSlack, "took \(elapsed)")
                // Every download fits easily; every attachment is delivered, some without a thumbnail,
                // and those say that the deadline cut their thumbnail (and so their decode) short.
                #expect(batch.attachments.allSatisfy { $0.status == .ready }, "\(batch.attachments.map { $0.reason?.message ?? "ready" })")
                #expect(batch.attachments.contains { $0.thumbnail == nil })
                for attachment in batch.attachments {
                    #expect(attachment.skippedAtDeadline == (attachment.thumbnail == nil ? ["thumbnail"] : nil), "\(attachment.identifier)")
                }
                // The same URLs again, with time to spare: a result cut short was not cached, so it is
                // made again (a miss, now with its thumbnail); a complete one is a hit.
                let again = await pipeline.process(requests, deadline: .seconds(60))
                try await offPool { server.shutdown() }
                for (first, second) in zip(batch.attachments, again.attachments) {
                    let cutShort = first.skippedAtDeadline != nil
                    #expect(second.cache == (cutShort ? .miss : .hit), "\(first.identifier)")
                    #expect(second.thumbnail != nil && second.skippedAtDeadline == nil, "\(first.identifier)")
                }
                if let directory = again.directory { try? FileManager.default.removeItem(atPath: directory) }
                return batch
            } // the pipeline is shut down: the cached results' files go
            // Abandoned thumbnails finish (or are skipped) later; none of their output is left behind.
            let directory = try #require(batch.directory)
            let name = (directory as NSString).lastPathComponent
            // The pipeline's shutdown waited for the queued decodes; what is left is their tasks
            // removing what they made.
            let expected = Set([name] + batch.attachments.flatMap { d -> [String] in
                [d.file, d.thumbnail?.file].compactMap { $0.map { "\(name)/" + ($0 as NSString).lastPathComponent } }
            })
            try await waitUntil("only the delivered files are left") { Set(scratch.tree()) == expected }
        }

        /// A probe still running at the deadline: the video is delivered as sniffed (no duration,
        /// no poster) and says so. The deadline is an instant of the pipeline's clock, moved past by
        /// hand once the probe has started, so it finds the probe under way on any machine.
        @Test func probeThatCannotFinishIsSkippedAndSaysSo() async throws {
            let media = Scratch(), scratch = Scratch()
            let clock = ManualClock()
            // 25 s at 25 fps with one keyframe: a poster at 24 s decodes up to 600 frames from the
            // start, which takes long enough for the clock to be moved while it runs.
            let made = try await offPool {
                try tool("/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25", "-t", "25",
                                             "-c:v", "libx264", "-preset", "ultrafast", "-g", "1000", "-pix_fmt", "yuv420p",
                                             "-y", "\(media.path)/long.mp4"])
            }
            #expect(made.status == 0, "\(made.errors)")
            try await withMediaServer(directory: media.path) { server in
                let (probed, late, tried) = try await withPipeline(scratch, { $0.clock = clock.clock }) { pipeline in
                    let url = "\(server.baseURL)/media/long.mp4"
                    // The clock standing still: the probe ends and makes its poster.
                    let probed = await fetchOne(url, pipeline, thumbnailTime: 24, deadline: .seconds(30))
                    var late: AttachmentDescriptor?
                    var tried = 0
                    // A probe that ends before the clock is moved (a stalled test thread) finishes in
                    // time, which is right but tests nothing: then once more, three times at most.
                    while late == nil && tried < 3 {
                        tried += 1
                        let before = pipeline.decodesStarted.probes
                        let attempt = Task { await fetchOne(url, pipeline, thumbnailTime: 24, deadline: .seconds(30)) }
                    defer { attempt.cancel() }
                        try await waitUntil("the probe to start") { pipeline.decodesStarted.probes > before }
                        clock.advance(by: .seconds(30))
                        let answer = await attempt.value
                        #expect(answer.status == .ready, "\(answer.reason?.message ?? "")")
                        if answer.skippedAtDeadline != nil { late = answer }
                    }
                    return (probed, late, tried)
                }
                #expect(probed.status == .ready && probed.thumbnail != nil && probed.duration != nil && probed.skippedAtDeadline == nil,
                        "\(probed.reason?.message ?? "")")
                let skipped = try #require(late, "the probe finished in time in \(tried) tries")
                #expect(skipped.skippedAtDeadline == ["probe"])
                #expect(skipped.thumbnail == nil && skipped.duration == nil && skipped.videoCodec == nil)
            }
        }

        @Test("batchDeadlineHoldsWhenEveryTransferMisbehaves, within 300 ms of slack") func batchDeadlineHoldsWhenEveryTransferMisbehaves() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in // default timeouts: 5 s, 10 s, 3 s stall
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
        }

        @Test("hundredStallingConnectionsAtOnceStillMeetTheDeadline, within 300 ms of slack") func hundredStallingConnectionsAtOnceStillMeetTheDeadline() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.maxConcurrentTransfers = 100; $0.maxHostConnections = 100 }) { pipeline in
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
        }

        @Test("fiftyConcurrentBatchesEachMeetTheirOwnDeadline, within 300 ms of slack") func fiftyConcurrentBatchesEachMeetTheirOwnDeadline() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
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
                                #expect(elapsed < deadline + timingSlack, "batch \(index): \(elapsed) for \(deadline)")
                                #expect(batch.attachments.count == 4)
                                #expect(batch.attachments[1].status == .timedOut && batch.attachments[3].status == .timedOut)
                            }
                        }
                    }
                    #expect(scratch.tree().allSatisfy { !$0.contains(".part-") && !$0.contains(".thumb-") })
                }
            }
        }

        /// Converting cannot degrade (the original is not deliverable): past the deadline it is a
        /// deadline failure, on time, and its late files are removed.
        @Test func conversionThatCannotFinishFailsAtTheDeadline() async throws {
            let media = Scratch()
            let scratch = Scratch()
            // Two attempts (13 megapixels of noise is too big once, under a 2 MB limit).
            try await withPipeline(scratch, { $0.sizeLimits.image = 2_000_000 }) { pipeline in
                try writeNoiseImage(path: "\(media.path)/big.png", width: 3_600, height: 3_600, png: 3)
                try await withMediaServer(directory: media.path) { server in
                    let request = AttachmentRequest(url: "\(server.baseURL)/media/big.png")
                    // First learn this machine's download and conversion times (the fastest of two
                    // runs), then set the deadline an eighth of the way into the conversion. Too early
                    // is harmless (the download is cut off: also deadlineExceeded); only too late fails,
                    // and a warm third run can be quicker than both.
                    var downloads: [Int] = [], conversions: [Int] = []
                    for _ in 0..<2 {
                        let timed = await pipeline.process([request], deadline: .seconds(30)).attachments[0]
                        #expect(timed.status == .ready, "\(timed.reason?.message ?? "")")
                        #expect(timed.transforms == [.transcoded, .downscaled])
                        let convert = try #require(timed.timings.normalize)
                        // When the conversion started, from the batch's start.
                        downloads.append(timed.timings.total - (timed.timings.thumbnail ?? 0) - convert)
                        conversions.append(convert)
                        // Emptied but for the workers' own directory, which the pipeline keeps.
                        for entry in try FileManager.default.contentsOfDirectory(atPath: scratch.path)
                        where !entry.hasPrefix(".attach-fetch-workers-") {
                            try? FileManager.default.removeItem(atPath: scratch.path + "/" + entry)
                        }
                    }
                    let download = downloads.min()!, convert = conversions.min()!
                    let deadline = Duration.milliseconds(download + convert / 8)

                    let started = ContinuousClock.now
                    let batch = await pipeline.process([request], deadline: deadline)
                    let elapsed = ContinuousClock.now - started
                    let d = batch.attachments[0]
                    #expect(d.status == .timedOut, "conversion from \(download) ms, for \(convert) ms: \(d.reason?.message ?? "ready")")
                    #expect(d.reason?.code == .deadlineExceeded)
                    #expect(elapsed < deadline + .milliseconds(300), "\(elapsed)")
                    // The abandoned conversion finishes on its thread and removes what it made.
                    try await waitUntil("the abandoned conversion removed its files", timeout: .seconds(10)) { scratch.tree().isEmpty }
                }
            }
        }
    }
}
