import AttachFetchCore
import Foundation
import Logging
import ObjectStoreTestHelpers
import Testing
import TestHelpers
@testable import AttachFetchObjectStore

/// The S3 client alone against a real store (SeaweedFS on loopback, every signature checked):
/// what the pipeline's publishing and shared results are built on.
@Suite(.sharedSeaweedStore) struct ObjectStoreClientTests {
    /// A client of the suite's store, under a prefix of the test's own.
    private func withClient<T>(secret: String = SeaweedStore.secretKey, _ body: (ObjectStore, SeaweedStore, String) async throws -> T) async throws -> T {
        let store = try SeaweedStore.current()
        let prefix = "client-\(UInt32.random(in: 0...UInt32.max))"
        let client = try ObjectStore(target: store.target(prefix: prefix, secret: secret), maxConcurrent: 4, logger: Logger(label: "test"))
        defer { Thread { client.shutdown() }.start() }
        return try await body(client, store, prefix)
    }

    private var deadline: ContinuousClock.Instant { .now + .seconds(20) }

    /// An object written is there, read back whole into memory and into a file, with the type
    /// and caching it was written with; a second write that asks for an absent key leaves it
    /// alone; once removed it is gone, and removing it again is no error.
    @Test func anObjectWrittenIsReadBackThenRemoved() async throws {
        try await withClient { client, store, prefix in
            let body = Array("a small result document \(UInt64.random(in: 0...UInt64.max))".utf8)
            let key = client.target.key("result.json")
            let hash = try SHA256Digest.hex(of: body)
            #expect(try await client.exists(key, deadline: deadline) == false)
            let first = try await client.put(key, body: .bytes(body), sha256: hash, contentType: "application/json",
                                             cacheControl: "max-age=60", onlyIfAbsent: true, deadline: deadline)
            let second = try await client.put(key, body: .bytes(Array("other".utf8)), sha256: try SHA256Digest.hex(of: Array("other".utf8)),
                                              contentType: "application/json", cacheControl: nil, onlyIfAbsent: true, deadline: deadline)
            #expect(first == .created && second == .alreadyThere)
            #expect(try await client.exists(key, deadline: deadline))
            #expect(try await client.get(key, deadline: deadline) == body)
            let scratch = Scratch()
            #expect(try await client.download(key, to: "\(scratch.path)/copy", deadline: deadline))
            #expect(FileManager.default.contents(atPath: "\(scratch.path)/copy").map(Array.init) == body)
            // Read by another client (curl's own signing): what the store holds, as written.
            let seen = try await offPool { try store.object("media", key) }
            #expect(seen.status == 200 && Array(seen.body) == body)
            #expect(seen.headers["content-type"] == "application/json" && seen.headers["cache-control"] == "max-age=60", "\(seen.headers)")
            try await client.delete(key, deadline: deadline)
            #expect(try await client.exists(key, deadline: deadline) == false)
            #expect(try await client.get(key, deadline: deadline) == nil)
            try await client.delete(key, deadline: deadline)
            #expect(try await offPool { try store.keys("media", prefix: prefix) }.isEmpty)
        }
    }

    /// A body whose hash is not the one it is sent with is refused by the store (the hash is
    /// signed and sent as the object's checksum), and nothing is stored under the key.
    @Test func aBodyThatIsNotItsHashIsRefused() async throws {
        try await withClient { client, store, prefix in
            let key = client.target.key("damaged.bin")
            let stated = try SHA256Digest.hex(of: Array("what was meant".utf8))
            await #expect(throws: ObjectStoreError.self) {
                _ = try await client.put(key, body: .bytes(Array("what arrived".utf8)), sha256: stated, contentType: "application/octet-stream",
                                         cacheControl: nil, onlyIfAbsent: false, deadline: deadline)
            }
            #expect(try await offPool { try store.keys("media", prefix: prefix) }.isEmpty)
        }
    }

    /// Credentials the store does not accept: the bucket check fails with the store's own code
    /// (not retried as a failure of the store), and neither secret appears in what it says.
    @Test func aWrongSecretIsRefusedInTheStoresWordsWithoutTheSecret() async throws {
        let wrong = "wrong-\(UInt64.random(in: 1...UInt64.max))"
        try await withClient(secret: wrong) { client, _, _ in
            do {
                try await client.checkBucket(deadline: deadline)
                Issue.record("a wrong secret was accepted")
            } catch let error as ObjectStoreError {
                #expect(["SignatureDoesNotMatch", "AccessDenied", "InvalidAccessKeyId"].contains(error.code), "\(error.description)")
                #expect(error.status == 403, "\(error.description)")
                for text in [error.description, error.message, String(reflecting: error)] {
                    #expect(!text.contains(wrong) && !text.contains(SeaweedStore.secretKey), "\(text)")
                }
            } catch {
                Issue.record("not the store's error: \(error)")
            }
            #expect(client.requestCounts["GET", default: 0] + client.requestCounts["HEAD", default: 0] == 2, "\(client.requestCounts)")
        }
    }
}
