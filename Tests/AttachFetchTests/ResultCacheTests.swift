import Foundation
import Testing
@testable import AttachFetch

/// Finished results reused while fresh, revalidated when stale, bounded, and never served
/// when their files are gone.
@Suite struct ResultCacheTests {
    /// `withPipeline` with the result cache on, set by `adjust`.
    private func withCachedPipeline<T: Sendable>(_ scratch: Scratch, clock: AttachFetchClock = .system,
                                                 _ adjust: (inout ResultCaching) -> Void = { _ in },
                                                 _ body: (AttachmentPipeline) async throws -> T) async throws -> T {
        try await withPipeline(scratch, { configuration in
            var caching = ResultCaching()
            adjust(&caching)
            configuration.cache = caching
            configuration.clock = clock
        }, body)
    }

    @Test func aFreshResultIsAHitWithItsOwnFile() async throws {
        let scratch = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        // `throws` spelled out: the body's only `try` is inside #expect, which inference does not see.
        try await withCachedPipeline(scratch) { pipeline async throws in
            let url = origin.url("photo.jpg", "cc=max-age%3D60")
            let first = await fetchOne(url, pipeline)
            let second = await fetchOne(url, pipeline)
            #expect(first.cache == .miss && second.cache == .hit)
            #expect(origin.requests("photo.jpg") == 1)
            #expect(second.status == .ready && second.file != first.file)
            #expect(try sha256sum(second.file!) == first.sha256)
            #expect(second.timings.download == nil, "a hit downloads nothing")
        }
    }

    @Test func noStorePrivateAndContradictoryHeadersAreNeverCached() async throws {
        let scratch = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        try await withCachedPipeline(scratch) { pipeline in
            for (index, query) in ["cc=no-store", "cc=private%2C%20max-age%3D60", "cc=max-age%3D60&cc2=max-age%3D5", "expires=twice"].enumerated() {
                let url = origin.url("photo.jpg", query + "&n=\(index)")
                let first = await fetchOne(url, pipeline)
                let second = await fetchOne(url, pipeline)
                #expect(first.cache == .miss && second.cache == .miss, "\(query)")
            }
            #expect(origin.requests("photo.jpg") == 8)
        }
    }

    @Test func aStaleResultIsRevalidatedAndA304ReusesIt() async throws {
        let scratch = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        try await withCachedPipeline(scratch) { pipeline in
            for (name, query) in [("photo.jpg", "cc=max-age%3D0&etag=v1"), ("rotated.jpg", "cc=no-cache&lm=1")] {
                let url = origin.url(name, query)
                let first = await fetchOne(url, pipeline)
                let second = await fetchOne(url, pipeline)
                #expect(first.cache == .miss)
                #expect(second.cache == .revalidated, "\(name)")
                #expect(second.status == .ready && second.sha256 == first.sha256)
                #expect(origin.bodies(name) == 1 && origin.notModified(name) == 1, "\(name)")
            }
            // The conditional request carried the validator.
            #expect(origin.server.requestHeaderLog.contains { $0["if-none-match"] == "\"v1\"" })
            #expect(origin.server.requestHeaderLog.contains { $0["if-modified-since"] == CachingOrigin.lastModified })
        }
    }

    @Test func theDefaultFreshnessAndTheMaximumApply() async throws {
        let scratch = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        let time = ManualClock()
        try await withCachedPipeline(scratch, clock: time.clock, {
            $0.defaultFreshness = .seconds(60)
            $0.maximumFreshness = .seconds(60)
        }) { pipeline in
            let silent = origin.url("photo.jpg")
            let forever = origin.url("rotated.jpg", "cc=max-age%3D86400")
            for url in [silent, forever] { _ = await fetchOne(url, pipeline) }
            #expect(await fetchOne(silent, pipeline).cache == .hit)
            #expect(await fetchOne(forever, pipeline).cache == .hit)
            time.advance(by: .seconds(59))
            #expect(await fetchOne(forever, pipeline).cache == .hit, "a day's max-age is capped at the maximum, not yet reached")
            time.advance(by: .seconds(2))
            // Stale, and without validators: fetched again.
            #expect(await fetchOne(silent, pipeline).cache == .miss)
            #expect(await fetchOne(forever, pipeline).cache == .miss)
            #expect(origin.requests("photo.jpg") == 2 && origin.requests("rotated.jpg") == 2)
        }
    }

    /// The cache measures freshness by the pipeline's one clock unless a clock of its own was
    /// set (the deprecated `ResultCaching.clock`), `.system` included: "not set" is nil, not
    /// a clock that happens to be the system's.
    @Test func freshnessIsByThePipelinesClockUnlessTheCacheWasGivenOne() async throws {
        let scratch = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        let time = ManualClock()
        #expect(ResultCaching().clockOverride == nil)
        try await withCachedPipeline(scratch, clock: time.clock, { $0.defaultFreshness = .seconds(60) }) { pipeline in
            let url = origin.url("photo.jpg")
            _ = await fetchOne(url, pipeline)
            time.advance(by: .seconds(61))
            #expect(await fetchOne(url, pipeline).cache == .miss, "not measured by the pipeline's clock")
        }
        try await withCachedPipeline(scratch, clock: time.clock, {
            $0.defaultFreshness = .seconds(60)
            $0.clockOverride = .system
        }) { pipeline in
            let url = origin.url("photo.jpg", "n=2")
            _ = await fetchOne(url, pipeline)
            time.advance(by: .seconds(61))
            #expect(await fetchOne(url, pipeline).cache == .hit, "the cache's own clock, the system's, has not moved a minute")
        }
    }

    @Test func failuresThatWouldRecurAreCachedBrieflyTransientOnesNever() async throws {
        let scratch = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        let time = ManualClock()
        try await withCachedPipeline(scratch, clock: time.clock, {
            $0.failureFreshness = .seconds(30)
        }) { pipeline in
            let missing = origin.url("photo.jpg", "status=404")
            let notMedia = origin.url("document.pdf")
            #expect(await fetchOne(missing, pipeline).reason?.code == .httpStatus)
            #expect(await fetchOne(notMedia, pipeline).reason?.code == .unsupportedType)
            let again = await fetchOne(missing, pipeline)
            #expect(again.reason?.code == .httpStatus && again.cache == .hit)
            #expect(await fetchOne(notMedia, pipeline).cache == .hit)
            #expect(origin.requests("photo.jpg") == 1 && origin.requests("document.pdf") == 1)
            time.advance(by: .seconds(29))
            #expect(await fetchOne(missing, pipeline).cache == .hit)
            time.advance(by: .seconds(2))
            #expect(await fetchOne(missing, pipeline).cache == .miss)
            #expect(origin.requests("photo.jpg") == 2)
        }
        // A connection refused, a timeout, a deadline: never cached. The deadline passes in real
        // time here: the pipeline's own clock.
        try await withCachedPipeline(scratch, { $0.failureFreshness = .seconds(30) }) { pipeline in
            let refused = "http://127.0.0.1:1/photo.jpg"
            #expect(await fetchOne(refused, pipeline).reason?.code == .connectFailed)
            #expect(await fetchOne(refused, pipeline).cache == .miss)
            let slow = origin.url("rotated.jpg", "delay=600")
            #expect(await fetchOne(slow, pipeline, deadline: .milliseconds(300)).reason?.code == .deadlineExceeded)
            #expect(await fetchOne(slow, pipeline, deadline: .milliseconds(300)).cache == .miss)
        }
    }

    /// The hidden work store's files (results held by the cache): unnamed files this process
    /// holds open there ("…/.attach-fetch-XXXXXX/#123 (deleted)"), and named ones.
    private func storeFiles(_ scratch: Scratch) -> [String] {
        TestProcess.openFiles(getpid()).filter { $0.hasPrefix(scratch.path + "/.attach-fetch-") && $0.hasSuffix("(deleted)") }
            + scratch.tree().filter { $0.hasPrefix(".attach-fetch-") && $0.contains("/") }
    }

    @Test func theCacheIsBoundedByEntriesAndBytesAndEvictedFilesGo() async throws {
        let scratch = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        let urls = ["photo.jpg", "rotated.jpg", "alpha.png"].map { origin.url($0, "cc=max-age%3D60") }
        try await withCachedPipeline(scratch, { $0.maxEntries = 2 }) { pipeline in
            for url in urls { _ = await fetchOne(url, pipeline) }
            // Two entries (files and thumbnails) are held; the oldest was evicted with its files.
            #expect(storeFiles(scratch).count == 4, "\(storeFiles(scratch))")
            #expect(await fetchOne(urls[2], pipeline).cache == .hit)
            #expect(await fetchOne(urls[0], pipeline).cache == .miss)
        }
        #expect(storeFiles(scratch).isEmpty, "shutdown drops the cache and its files")

        let small = Scratch()
        // photo.jpg and its thumbnail are about 18 KB: over a 15,000-byte bound, never kept.
        try await withCachedPipeline(small, { $0.maxBytes = 15_000 }) { bounded in
            let url = origin.url("photo.jpg", "cc=max-age%3D60&n=bytes")
            #expect(await fetchOne(url, bounded).cache == .miss)
            #expect(await fetchOne(url, bounded).cache == .miss)
            // Let go once the result is made, which the descriptor may reach first: on a loaded
            // machine a file of the last miss was still open when it was read at once.
            try await waitUntil("the unkept result's files to be let go", timeout: .seconds(5)) { storeFiles(small).isEmpty }
        }
    }

    /// The entry evicted is the least recently *used*, not the oldest made: a hit keeps an
    /// entry, over many rounds of hits and misses (the recency records are rebuilt on the way).
    @Test func theLeastRecentlyUsedEntryIsEvicted() async throws {
        let scratch = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        try await withCachedPipeline(scratch, { $0.maxEntries = 2 }) { pipeline in
            let kept = origin.url("photo.jpg", "cc=max-age%3D60&lru=kept")
            #expect(await fetchOne(kept, pipeline).cache == .miss)
            for round in 0..<40 {
                let newcomer = origin.url("rotated.jpg", "cc=max-age%3D60&lru=\(round)")
                #expect(await fetchOne(newcomer, pipeline).cache == .miss)
                // Used again: the most recent now, so the next newcomer evicts this round's.
                #expect(await fetchOne(kept, pipeline).cache == .hit, "round \(round)")
            }
            let first = origin.url("rotated.jpg", "cc=max-age%3D60&lru=0")
            #expect(await fetchOne(first, pipeline).cache == .miss, "evicted long ago")
        }
    }

    /// A batch of hits only is answered without tasks; a batch with one miss among hits takes
    /// the usual way, and the hits it looked at first are let go (an evicted entry's files go).
    @Test func aBatchOfHitsAndABatchWithOneMissBothHoldNothingAfterwards() async throws {
        let scratch = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        try await withCachedPipeline(scratch, { $0.maxEntries = 1 }) { pipeline in
            let first = origin.url("photo.jpg", "cc=max-age%3D60&mixed=a")
            let second = origin.url("rotated.jpg", "cc=max-age%3D60&mixed=b")
            #expect(await fetchOne(first, pipeline).cache == .miss)
            let hits = await pipeline.process([AttachmentRequest(url: first, identifier: "one"), AttachmentRequest(url: first)])
            #expect(hits.attachments.map(\.cache) == [.hit, .hit])
            #expect(hits.attachments.map(\.identifier) == ["one", "attachment-1"])
            #expect(hits.attachments.allSatisfy { $0.status == .ready && $0.thumbnail != nil })
            #expect(Set(hits.attachments.compactMap(\.file)).count == 2, "each its own file")
            let mixed = await pipeline.process([AttachmentRequest(url: first), AttachmentRequest(url: second)])
            #expect(mixed.attachments.map(\.cache) == [.hit, .miss])
            // One entry at most: the second URL's result evicted the first's, whose files go once
            // nobody holds it.
            let names = storeFiles(scratch)
            #expect(names.count == 2, "\(names)")
            #expect(origin.requests("photo.jpg") == 1)
        }
    }

    /// An entry whose published copy was removed (by `prune`, or by hand) is a miss, never
    /// served. (Its own files are unnamed: nothing can remove them behind the cache's back.)
    @Test func anEntryWhoseFilesWereRemovedIsAMissNeverServed() async throws {
        let scratch = Scratch(), publish = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        try await withPipeline(scratch, { configuration in
            configuration.cache = ResultCaching()
            configuration.publish = Publishing(directory: publish.path, baseURL: "https://media.example.test/push/")
        }) { pipeline in
            let url = origin.url("photo.jpg", "cc=max-age%3D60")
            #expect(await fetchOne(url, pipeline).status == .ready)
            let thumbnails = publish.tree().filter { $0.hasSuffix(".thumb.jpg") }
            #expect(thumbnails.count == 1, "\(publish.tree())")
            for file in thumbnails { unlink("\(publish.path)/\(file)") }
            let after = await fetchOne(url, pipeline)
            #expect(after.cache == .miss)
            #expect(after.status == .ready && after.thumbnail != nil)
            #expect(origin.requests("photo.jpg") == 2)
        }
    }
}
