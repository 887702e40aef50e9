import Foundation
#if canImport(Glibc)
import Glibc
#endif
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

extension ObjectStoreBoundSuites {
    /// Publishing to a real object store (SeaweedFS on loopback, signatures checked), and the
    /// store as the result cache and lease table that replicas share. Each "replica" here is a
    /// pipeline of its own; `ReplicaTests` runs real service processes behind nginx.
    // Serialized: tests time retries and a store that stops mid-batch against the deadline.
    @Suite(.serialized, .sharedSeaweedStore) struct ObjectStoreTests {

        /// `withPipeline` publishing to `store` under `prefix`, with the result cache on unless `cache` is false.
        private func withStorePipeline<T: Sendable>(_ scratch: Scratch, _ store: SeaweedStore, prefix: String, cache: Bool = true,
                                                    clock: ManualClock? = nil,
                                                    _ body: (AttachmentPipeline) async throws -> T) async throws -> T {
            try await withPipeline(scratch, { configuration in
                configuration.objectStore = try? store.target(prefix: prefix)
                if cache { configuration.cache = ResultCaching() }
                if let clock { configuration.clock = clock.clock }
            }, body)
        }

        private func key(_ url: String?, prefix: String) -> String {
            "\(prefix)/\(((url ?? "") as NSString).lastPathComponent)"
        }

        @Test func publishesEachFileWholeWithItsTypeCacheControlAndChecksum() async throws {
            let store = try SeaweedStore.current()
            let scratch = Scratch()
            let prefix = "whole-\(UInt32.random(in: 0...UInt32.max))"
            let batch = try await withStorePipeline(scratch, store, prefix: prefix, cache: false) { pipeline in
                try await withMediaServer { server in
                    await pipeline.process(["photo.jpg", "image.webp", "clip.mp4"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") })
                }
            }
            var checked = 0
            for descriptor in batch.attachments {
                #expect(descriptor.status == .ready, "\(descriptor.url): \(descriptor.reason?.message ?? "")")
                let files = [(descriptor.file, descriptor.publishedUrl), (descriptor.thumbnail?.file, descriptor.thumbnail?.publishedUrl)]
                for case let (file?, url?) in files {
                    #expect(url.hasPrefix("https://cdn.example.test/\(prefix)/"))
                    let object = try store.object("media", key(url, prefix: prefix))
                    #expect(object.status == 200)
                    let local = try #require(FileManager.default.contents(atPath: file))
                    #expect(object.body == local, "\(url): the bytes read back are the bytes delivered")
                    #expect(try sha256sum(file) == String((url as NSString).lastPathComponent.prefix(64)) || url.contains(".thumb."))
                    let suffix = (file as NSString).pathExtension
                    #expect(object.headers["content-type"] == ObjectPublisher.contentType(ofSuffix: suffix))
                    #expect(object.headers["cache-control"] == "public, max-age=31536000, immutable")
                    checked += 1
                }
            }
            // The WebP was converted: a JPEG is published under its own content's hash.
            #expect(batch.attachments[1].publishedUrl?.hasSuffix(".jpg") == true)
            #expect(checked == 6, "three files and three thumbnails read back")
        }

        @Test func contentAlreadyThereIsNotUploadedAgain() async throws {
            let store = try SeaweedStore.current()
            let scratch = Scratch()
            let prefix = "again-\(UInt32.random(in: 0...UInt32.max))"
            var puts: [Int] = []
            for _ in 0..<2 {
                puts.append(try await withStorePipeline(scratch, store, prefix: prefix, cache: false) { pipeline in
                    let descriptor = try await withMediaServer { server in await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline) }
                    #expect(descriptor.status == .ready && descriptor.publishedUrl != nil)
                    return pipeline.objectStore?.requestCounts["PUT"] ?? 0
                })
            }
            #expect(puts == [2, 0], "the file and its thumbnail once; nothing the second time (\(puts))")
            #expect(try store.keys("media", prefix: prefix).count == 2)
        }

        @Test func aBodyDamagedOnTheWayIsRefusedAndNothingIsVisible() async throws {
            let store = try SeaweedStore.current()
            let objectStore = try ObjectStore(target: store.target(prefix: "damaged"), maxConcurrent: 2, logger: AttachmentPipeline.silentLogger)
            defer { objectStore.shutdown() }
            let body = Array("the real bytes".utf8)
            let otherHash = String(repeating: "ab", count: 32)
            await #expect(throws: ObjectStoreError.self) {
                _ = try await objectStore.put("damaged/x.jpg", body: .bytes(body), sha256: otherHash, contentType: "image/jpeg",
                                              cacheControl: nil, onlyIfAbsent: true, deadline: .now + .seconds(10))
            }
            do {
                _ = try await objectStore.put("damaged/x.jpg", body: .bytes(body), sha256: otherHash, contentType: "image/jpeg",
                                              cacheControl: nil, onlyIfAbsent: true, deadline: .now + .seconds(10))
            } catch {
                #expect(error.code == "BadDigest", "\(error)")
            }
            #expect(try store.object("media", "damaged/x.jpg").status == 404, "nothing under the key")
        }

        @Test func aStoreThatStopsMidBatchFailsOnlyThePublishingWithinTheDeadline() async throws {
            let store = try SeaweedStore()
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let requests = [AttachmentRequest(url: origin.url("photo.jpg", "delay=1500")),
                            AttachmentRequest(url: origin.url("missing.jpg", "status=404")),
                            AttachmentRequest(url: origin.url("document.pdf"))]
            let (batch, elapsed) = try await withStorePipeline(scratch, store, prefix: "stopping", cache: false) { pipeline in
                // The photo's origin answers 1.5 s after its request: the store stops while it is on its way.
                let stopper = Task {
                    try await waitUntil("the photo's request at the origin") { origin.requests("photo.jpg") == 1 }
                    store.stop()
                }
                let started = ContinuousClock.now
                let batch = await pipeline.process(requests, deadline: .seconds(6))
                let elapsed = ContinuousClock.now - started
                try await stopper.value
                return (batch, elapsed)
            }
            let photo = batch.attachments[0]
            #expect(photo.status == .failed && photo.reason?.code == .publishFailed, "\(photo.reason?.message ?? "ready")")
            #expect(photo.reason?.message.contains("ConnectionFailed") == true, "\(photo.reason?.message ?? "")")
            #expect(photo.reason?.message.contains(SeaweedStore.secretKey) == false)
            #expect(batch.attachments[1].reason?.code == .httpStatus)
            #expect(batch.attachments[2].reason?.code == .unsupportedType)
            #expect(elapsed < .seconds(6) + .milliseconds(500), "answered by the deadline (\(elapsed))")
            #expect(scratch.tree().filter { !$0.hasSuffix("/") && $0.contains(".jpg") }.allSatisfy { $0.contains("attach-fetch-") },
                    "\(scratch.tree())")
        }

        @Test("aStoreAnsweringSlowDownIsRetriedWithinTheDeadlineThenPublishFailed, within 300 ms of slack") func aStoreAnsweringSlowDownIsRetriedWithinTheDeadlineThenPublishFailed() async throws {
            // An endpoint that only ever answers 503 SlowDown, as S3 does under too high a rate.
            let server = try LoopbackHTTPServer { request, connection in
                if request.method == "HEAD" { connection.sendHead(status: 503, reason: "Slow Down", contentLength: 0); return }
                connection.respond(status: 503, reason: "Slow Down", contentType: "application/xml",
                                   body: Array("<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>".utf8))
            }
            defer { server.shutdown() }
            let scratch = Scratch()
            func slowStore(maxAttempts: Int) -> (inout AttachFetchConfiguration) -> Void {
                { configuration in
                    configuration.objectStore = try? ObjectStorePublishing(
                        location: "s3://media/slow", baseURL: "https://cdn.example.test/slow", endpoint: server.baseURL,
                        credentials: ObjectStoreCredentials(accessKeyID: "key", secretAccessKey: "secret-never-shown"))
                    configuration.objectStore?.maxAttempts = maxAttempts
                }
            }
            let descriptor = try await withPipeline(scratch, slowStore(maxAttempts: 3)) { pipeline in
                try await withMediaServer { media in await fetchOne("\(media.baseURL)/media/photo.jpg", pipeline) }
            }
            let storeRequests = server.requestLog.filter { $0.hasPrefix("/media/slow/") }.count
            #expect(descriptor.reason?.code == .publishFailed, "\(descriptor.reason?.message ?? "ready")")
            #expect(descriptor.reason?.message.contains("503") == true && descriptor.reason?.message.contains("secret-never-shown") == false)
            #expect(storeRequests == 3, "tried maxAttempts times (\(storeRequests))")
            // With a deadline shorter than the backoff, the retries stop at the deadline.
            let (late, elapsed) = try await withPipeline(scratch, slowStore(maxAttempts: 1000)) { patient in
                let started = ContinuousClock.now
                let late = try await withMediaServer { media in await fetchOne("\(media.baseURL)/media/rotated.jpg", patient, deadline: .seconds(2)) }
                return (late, ContinuousClock.now - started)
            }
            #expect(late.status != .ready && elapsed < .seconds(2) + timingSlack, "\(late.reason?.message ?? "") after \(elapsed)")
        }

        @Test func aSecondReplicaServesTheStoredResultWithoutAskingTheOrigin() async throws {
            let store = try SeaweedStore.current()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let prefix = "shared-\(UInt32.random(in: 0...UInt32.max))"
            let url = origin.url("photo.jpg", "cc=max-age%3D300")
            let scratches = [Scratch(), Scratch()]
            let made = try await withStorePipeline(scratches[0], store, prefix: prefix) { first in await fetchOne(url, first) }
            #expect(made.status == .ready && made.cache == .miss)
            let (reused, again) = try await withStorePipeline(scratches[1], store, prefix: prefix) { second in
                let reused = await fetchOne(url, second)
                let again = await fetchOne(url, second)
                return (reused, again)
            }
            #expect(reused.status == .ready && reused.cache == .shared, "\(reused.cache?.rawValue ?? "-") \(reused.reason?.message ?? "")")
            #expect(again.cache == .hit, "then held by the replica's own cache")
            #expect(origin.requests("photo.jpg") == 1, "one origin request in all")
            #expect(reused.publishedUrl == made.publishedUrl && reused.thumbnail?.publishedUrl == made.thumbnail?.publishedUrl)
            let file = try #require(reused.file)
            #expect(try sha256sum(file) == made.sha256, "the delivered file itself, read back from the store")
            #expect(reused.thumbnail?.file != nil && FileManager.default.fileExists(atPath: reused.thumbnail!.file))
        }

        @Test func resultsTheCacheMustNotKeepAreNeverStored() async throws {
            let store = try SeaweedStore.current()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let prefix = "never-\(UInt32.random(in: 0...UInt32.max))"
            let scratch = Scratch()
            let (late, noStore, kept) = try await withStorePipeline(scratch, store, prefix: prefix) { pipeline in
                let late = await pipeline.process([AttachmentRequest(url: origin.url("photo.jpg", "delay=3000"))], deadline: .seconds(1))
                let noStore = await fetchOne(origin.url("tone.mp3", "cc=no-store"), pipeline)
                let kept = await fetchOne(origin.url("rotated.jpg", "cc=max-age%3D60"), pipeline)
                return (late, noStore, kept)
            }
            #expect(late.attachments[0].reason?.code == .deadlineExceeded)
            #expect(noStore.status == .ready && kept.status == .ready)
            // The late caller's lease is given back by a release that runs on its own.
            try await waitUntil("every lease given back") { try !store.keys("media", prefix: prefix).contains { $0.contains("/leases/") } }
            let keys = try store.keys("media", prefix: prefix)
            let results = keys.filter { $0.hasPrefix("\(prefix)/results/") }
            #expect(results.count == 1, "only the result the cache may keep: \(keys)")
        }

        /// A lease put answered after the caller's deadline (within `StoreResults.leaseGrace`)
        /// is known all the same, and the lease given back: not left standing to its expiry.
        @Test("aLeaseAnsweredAfterTheDeadlineIsGivenBack, within 300 ms of slack") func aLeaseAnsweredAfterTheDeadlineIsGivenBack() async throws {
            let store = try SeaweedStore.current()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let prefix = "unanswered-\(UInt32.random(in: 0...UInt32.max))"
            let relay = try AnswerHoldingRelay(to: store.port, holdingAnswersTo: "PUT /media/\(prefix)/leases/", for: .seconds(2))
            defer { relay.shutdown() }
            let (late, elapsed) = try await withPipeline(Scratch(), { configuration in
                configuration.objectStore = try? store.target(prefix: prefix, through: relay.url)
                configuration.cache = ResultCaching()
            }) { pipeline in
                let started = ContinuousClock.now
                let late = await pipeline.process([AttachmentRequest(url: origin.url("photo.jpg"))], deadline: .seconds(1))
                return (late, ContinuousClock.now - started)
            }
            #expect(late.attachments[0].reason?.code == .deadlineExceeded, "\(late.attachments[0].reason?.message ?? "ready")")
            #expect(relay.heldRequests == 1, "the lease's put reached the store, its answer held")
            #expect(origin.requests("photo.jpg") == 0, "not fetched for a caller that is gone")
            #expect(elapsed < .seconds(1) + StoreResults.leaseGrace + timingSlack, "the put waited for at most its grace (\(elapsed))")
            let leases = try store.keys("media", prefix: prefix).filter { $0.contains("/leases/") }
            #expect(leases.isEmpty, "given back before the pipeline's shutdown returned: \(leases)")
        }

        @Test func concurrentMissesOnTwoReplicasMakeOneOriginRequest() async throws {
            let store = try SeaweedStore.current()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let prefix = "lease-\(UInt32.random(in: 0...UInt32.max))"
            let url = origin.url("photo.jpg", "delay=600")
            let scratches = [Scratch(), Scratch()]
            let descriptors = try await withStorePipeline(scratches[0], store, prefix: prefix) { first in
                try await withStorePipeline(scratches[1], store, prefix: prefix) { second in
                    let replicas = [first, second]
                    return await withTaskGroup(of: AttachmentDescriptor.self) { group in
                        for index in 0..<30 {
                            group.addTask { await replicas[index % 2].process([AttachmentRequest(url: url)], deadline: .seconds(15)).attachments[0] }
                        }
                        return await group.reduce(into: []) { $0.append($1) }
                    }
                }
            }
            #expect(descriptors.allSatisfy { $0.status == .ready }, "\(descriptors.compactMap(\.reason?.message))")
            #expect(origin.requests("photo.jpg") == 1, "one origin request across both replicas (\(origin.requests("photo.jpg")))")
            #expect(descriptors.contains { $0.cache == .shared }, "the other replica read the stored result")
        }

        /// Lease expiry reads the pipeline's clock: the test moves it past the expiry rather than
        /// waiting for it.
        @Test func aDeadHoldersLeaseDelaysOthersOnlyUntilItExpires() async throws {
            let store = try SeaweedStore.current()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let prefix = "dead-\(UInt32.random(in: 0...UInt32.max))"
            let url = origin.url("photo.jpg")
            let scratch = Scratch()
            let clock = ManualClock()
            let (descriptor, short) = try await withStorePipeline(scratch, store, prefix: prefix, clock: clock) { pipeline in
                // A lease as a replica that was killed leaves it: expiring 5 s from now.
                let name = try #require(pipeline.storeResults?.name(for: ResultKey(AttachmentRequest(url: url), platforms: [.ios])))
                let expires = clock.clock.wallSeconds + 5
                try store.put("media", "\(prefix)/leases/\(name)", body: #"{"holder":"dead:1:1","expires":\#(expires)}"#)
                let fetch = Task { await fetchOne(url, pipeline, deadline: .seconds(20)) }
                // Held: the waiter asks the store again and again, and not the origin.
                try await waitUntil("the waiter polls the lease") { (pipeline.objectStoreRequests["GET"] ?? 0) >= 3 }
                #expect(origin.requests("photo.jpg") == 0)
                clock.advance(by: .seconds(6))
                let descriptor = await fetch.value
                // With a deadline before the expiry, the waiter answers by its deadline.
                let other = try #require(pipeline.storeResults?.name(for: ResultKey(AttachmentRequest(url: origin.url("rotated.jpg")), platforms: [.ios])))
                try store.put("media", "\(prefix)/leases/\(other)", body: #"{"holder":"dead:1:1","expires":\#(clock.clock.wallSeconds + 30)}"#)
                let sentinels = clock.sleeping
                let waiting = Task { await pipeline.process([AttachmentRequest(url: origin.url("rotated.jpg"))], deadline: .seconds(1)) }
                try await waitUntil("the batch's deadline sentinel sleeps") { clock.sleeping > sentinels }
                clock.advance(by: .seconds(1))
                return (descriptor, await waiting.value)
            }
            #expect(descriptor.status == .ready && descriptor.cache == .miss)
            #expect(origin.requests("photo.jpg") == 1)
            #expect(short.attachments[0].reason?.code == .deadlineExceeded)
            #expect(origin.requests("rotated.jpg") == 0)
        }

        /// Stored freshness reads the pipeline's clock too: the second replica's is two seconds on.
        @Test func aStaleStoredResultIsRevalidatedWithTheOrigin() async throws {
            let store = try SeaweedStore.current()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let prefix = "stale-\(UInt32.random(in: 0...UInt32.max))"
            let url = origin.url("photo.jpg", "cc=max-age%3D1&etag=v1")
            let scratches = [Scratch(), Scratch()]
            try await withStorePipeline(scratches[0], store, prefix: prefix) { first in
                #expect(await fetchOne(url, first).cache == .miss)
            }
            let later = ManualClock()
            later.advance(by: .seconds(2))
            let revalidated = try await withStorePipeline(scratches[1], store, prefix: prefix, clock: later) { second in await fetchOne(url, second) }
            #expect(revalidated.status == .ready && revalidated.cache == .revalidated, "\(revalidated.cache?.rawValue ?? "-")")
            #expect(origin.bodies("photo.jpg") == 1 && origin.notModified("photo.jpg") == 1)
            #expect(revalidated.file.map { FileManager.default.fileExists(atPath: $0) } == true)
        }
    }
}

/// The configuration's checks of a store's settings (the settings themselves:
/// `AttachFetchObjectStoreTests.ObjectStoreSettingsTests`).
@Suite struct ObjectStoreConfigurationTests {
    private let credentials = ObjectStoreCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG")

    @Test func badSettingsAreRefused() throws {
        let target = try ObjectStorePublishing(location: "s3://media/p", baseURL: "https://cdn.example.test/",
                                               endpoint: "http://127.0.0.1:1", credentials: credentials)
        func refused(_ location: String, _ endpoint: String? = "http://127.0.0.1:1", base: String = "https://cdn.example.test/") -> Bool {
            guard let target = try? ObjectStorePublishing(location: location, baseURL: base, endpoint: endpoint, credentials: credentials)
            else { return true }
            var configuration = AttachFetchConfiguration()
            configuration.objectStore = target
            return (try? configuration.validate()) == nil
        }
        #expect(refused("media/p"), "no s3:// scheme")
        #expect(refused("s3://Media/p"), "an upper-case bucket")
        #expect(refused("s3://ab/p"), "a bucket name too short")
        #expect(refused("s3://media/a b"), "a key prefix that needs escaping")
        #expect(refused("s3://media/a//b"), "an empty path segment")
        #expect(refused("s3://media/p", "ftp://127.0.0.1"), "an endpoint that is not http(s)")
        #expect(refused("s3://media/p", base: "file:///srv"), "a public base that is not http(s)")
        #expect(!refused("s3://media/p"))
        var both = AttachFetchConfiguration()
        both.objectStore = target
        both.publish = Publishing(directory: "/tmp", baseURL: "https://cdn.example.test/")
        #expect(throws: AttachFetchError.self) { try both.validate() }
    }
}
