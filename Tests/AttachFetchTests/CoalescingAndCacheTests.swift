import Foundation
import Testing
@testable import AttachFetch

/// The cache's freshness rules, from headers alone.
@Suite struct HTTPFreshnessTests {
    private func lifetime(_ headers: CacheHeaders, now: Date = Date()) -> Duration? {
        HTTPFreshness.lifetime(of: headers, now: now, maximum: .seconds(600), fallback: .seconds(60))
    }

    @Test func headersDecideTheLifetime() {
        #expect(lifetime(CacheHeaders(cacheControl: ["public, max-age=120"])) == .seconds(120))
        #expect(lifetime(CacheHeaders(cacheControl: ["max-age=120, s-maxage=30"])) == .seconds(30))
        #expect(lifetime(CacheHeaders(cacheControl: ["max-age=86400"])) == .seconds(600), "capped by the maximum")
        #expect(lifetime(CacheHeaders()) == .seconds(60), "no headers: the default")
        #expect(lifetime(CacheHeaders(cacheControl: ["max-age=100"], age: "40")) == .seconds(60))
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let date = CachingOrigin.httpDate(now)
        #expect(lifetime(CacheHeaders(expires: [CachingOrigin.httpDate(now + 90)], date: date), now: now) == .seconds(90))
        #expect(lifetime(CacheHeaders(expires: [CachingOrigin.httpDate(now - 90)], date: date), now: now) == .zero)
        #expect(lifetime(CacheHeaders(expires: ["0"])) == .zero, "an unreadable Expires is already expired")
        #expect(lifetime(CacheHeaders(cacheControl: ["no-cache"])) == .zero, "stored, revalidated before each use")
        #expect(lifetime(CacheHeaders(pragma: ["no-cache"])) == .zero)
    }

    @Test func noStorePrivateAndContradictionsAreNeverCached() {
        #expect(lifetime(CacheHeaders(cacheControl: ["no-store"])) == nil)
        #expect(lifetime(CacheHeaders(cacheControl: ["private, max-age=60"])) == nil)
        #expect(lifetime(CacheHeaders(cacheControl: ["max-age=60", "max-age=10"])) == nil)
        #expect(lifetime(CacheHeaders(cacheControl: ["max-age=soon"])) == nil)
        #expect(lifetime(CacheHeaders(cacheControl: ["public, private"])) == nil)
        #expect(lifetime(CacheHeaders(expires: [CachingOrigin.httpDate(Date() + 60), CachingOrigin.httpDate(Date() + 120)])) == nil)
        // The same directive twice with the same value is not a contradiction.
        #expect(lifetime(CacheHeaders(cacheControl: ["max-age=60", "max-age=60"])) == .seconds(60))
    }

    @Test func httpDatesParseOnlyInTheirCurrentForm() {
        #expect(HTTPFreshness.parseDate("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPFreshness.parseDate("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
        #expect(HTTPFreshness.parseDate("Sun, 06 Nov 1994 25:49:37 GMT") == nil)
    }
}

extension DeadlineBoundSuites {
    /// One download per URL and options, however many callers ask at once.
    // Serialized: tests time a shared download and a cancellation against their bounds.
    @Suite(.serialized) struct CoalescingTests {
        @Test func thousandConcurrentRequestsOverFiftyBatchesMakeOneOriginRequest() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            // The origin answers after 1.5 s, so that every batch asks while the one download runs.
            let url = origin.url("photo.jpg", "delay=1500")
            let batches = try await withPipeline(scratch) { pipeline in
                await withTaskGroup(of: AttachmentBatch.self) { group in
                    for b in 0..<50 {
                        group.addTask {
                            await pipeline.process((0..<20).map { AttachmentRequest(url: url, identifier: "b\(b)-\($0)") },
                                                   deadline: .seconds(20))
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
            }
            #expect(origin.requests("photo.jpg") == 1)
            let all = batches.flatMap(\.attachments)
            #expect(all.count == 1000)
            #expect(all.allSatisfy { $0.status == .ready })
            #expect(all.filter { $0.cache == .miss }.count == 1)
            #expect(all.filter { $0.cache == .coalesced }.count == 999)
            // Each caller has its own identifier and its own files, in its own batch's directory.
            #expect(Set(all.map(\.identifier)).count == 1000)
            #expect(Set(all.compactMap(\.file)).count == 1000)
            #expect(all.allSatisfy { d in (d.file as NSString?)?.lastPathComponent == "\(d.identifier).jpg" })
            #expect(all.allSatisfy { FileManager.default.fileExists(atPath: $0.file!) && FileManager.default.fileExists(atPath: $0.thumbnail!.file) })
            // Nothing else is left: no work store, only the 50 batch directories.
            #expect(scratch.tree().filter { !$0.contains("/") }.allSatisfy { $0.hasPrefix("attach-fetch-") })
            #expect(scratch.tree().filter { !$0.contains("/") }.count == 50)
        }

        @Test("aCallerWhoseDeadlinePassesLeavesAndTheWorkGoesOnForTheOthers, within 300 ms of slack") func aCallerWhoseDeadlinePassesLeavesAndTheWorkGoesOnForTheOthers() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let url = origin.url("photo.jpg", "delay=1000")
            let (early, elapsed, patient) = try await withPipeline(scratch) { pipeline in
                async let short = timed(url, pipeline, deadline: .milliseconds(300))
                try await waitUntil("the first caller's request at the origin") { origin.requests("photo.jpg") == 1 }
                async let long = pipeline.process([AttachmentRequest(url: url)], deadline: .seconds(10)).attachments[0]
                let (early, elapsed) = await short
                let patient = await long
                return (early, elapsed, patient)
            }
            #expect(early.reason?.code == .deadlineExceeded)
            #expect(elapsed < .milliseconds(300) + timingSlack, "took \(elapsed)")
            #expect(patient.status == .ready, "\(patient.reason?.message ?? "")")
            #expect(patient.cache == .coalesced)
            #expect(origin.requests("photo.jpg") == 1)
        }

        @Test func aCancelledCallerLeavesAndTheWorkGoesOnForTheOthers() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let url = origin.url("photo.jpg", "delay=800")
            let (left, finished) = try await withPipeline(scratch) { pipeline in
                let cancelled = Task { await pipeline.process([AttachmentRequest(url: url)]).attachments[0] }
                try await waitUntil("the first caller's request at the origin") { origin.requests("photo.jpg") == 1 }
                let other = Task { await pipeline.process([AttachmentRequest(url: url)]).attachments[0] }
                try await waitUntil("the second caller joined the work") { pipeline.results.waiting == 2 }
                cancelled.cancel()
                let left = await cancelled.value
                let finished = await other.value
                return (left, finished)
            }
            #expect(left.reason?.code == .cancelled)
            #expect(finished.status == .ready)
            #expect(origin.requests("photo.jpg") == 1)
        }

        @Test("workNobodyWaitsForIsCancelledAndLeavesNothing, within 300 ms of slack") func workNobodyWaitsForIsCancelledAndLeavesNothing() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            try await withPipeline(scratch) { pipeline in
                let task = Task { await pipeline.process([AttachmentRequest(url: origin.url("photo.jpg", "delay=3000"))]).attachments[0] }
                try await waitUntil("the request at the origin") { origin.requests("photo.jpg") == 1 }
                let started = ContinuousClock.now
                task.cancel()
                let descriptor = await task.value
                #expect(ContinuousClock.now - started < timingSlack)
                #expect(descriptor.reason?.code == .cancelled)
                #expect(scratch.tree() == [])
                // The origin sees its client go away (the transfer was stopped, not left running).
                try await waitUntil("the origin's connection closed") { origin.server.openConnections == 0 }
            }
        }

        @Test func differentOptionsAreDifferentWork() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let url = origin.url("photo.jpg", "delay=300")
            // Typed: as an untyped literal inside the closure, it took 1.5 s to type-check.
            let requests: [AttachmentRequest] = [
                AttachmentRequest(url: url), AttachmentRequest(url: url),
                AttachmentRequest(url: url, clip: try ClippingRectangle(x: 0, y: 0, width: 0.5, height: 0.5)),
                AttachmentRequest(url: url, role: .avatar),
                AttachmentRequest(url: url, platforms: [.ios, .android]),
            ]
            let batch = try await withPipeline(scratch) { pipeline in await pipeline.process(requests) }
            #expect(origin.requests("photo.jpg") == 4)
            // Counted outside #expect: inside it, the filter's closure took 1.4 s to type-check.
            let coalesced = batch.attachments.filter { $0.cache == .coalesced }.count
            #expect(coalesced == 1)
            #expect(batch.attachments[2].thumbnail?.width != batch.attachments[0].thumbnail?.width)
        }
    }
}
