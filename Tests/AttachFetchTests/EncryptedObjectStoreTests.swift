import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

extension ObjectStoreBoundSuites {
    /// `serve --encrypt-media` publishing to SeaweedFS: ciphertext objects that decrypt to what
    /// was delivered, and no shared result record, which would hold the key. Beside the object
    /// store's other suites, which start SeaweedFS the same way (`.sharedSeaweedStore`).
    // Serialized: one test, sharing the group's process with timers.
    @Suite(.serialized, .sharedSeaweedStore) struct EncryptedObjectStoreTests {
        @Test func serveWithEncryptMediaPublishesCiphertextToSeaweedFSAndNoResultRecordCarriesAKey() async throws {
            let store = try SeaweedStore.current()
            let scratch = Scratch()
            let prefix = "encrypted-\(UInt32.random(in: 0...UInt32.max))"
            let (service, port) = try launchServe(["--allow-private-network", "--publish-to", "s3://media/\(prefix)",
                                                   "--public-base", "https://cdn.example.test/\(prefix)",
                                                   "--encrypt-media", "--media-key-file", try DeadlineBoundSuites.EncryptedPublishingTests.keyFile(scratch)],
                                                  environment: store.environment().merging(["TMPDIR": scratch.path]) { $1 })
            defer { service.terminate(); service.waitUntilExit() }
            let descriptors = try await withMediaServer { origin in
                let answer = try await Exchange.post("http://127.0.0.1:\(port)/v1/attachments",
                                                     json: #"{"urls": ["\#(origin.baseURL)/media/photo.jpg", "\#(origin.baseURL)/media/clip.mp4"]}"#)
                #expect(answer.status == 200, "\(answer.text)")
                struct Document: Decodable { var attachments: [AttachmentDescriptor] }
                return try JSONDecoder().decode(Document.self, from: answer.body).attachments
            }
            #expect(descriptors.count == 2)
            for descriptor in descriptors {
                #expect(descriptor.status == .ready, "\(descriptor.reason?.message ?? "")")
                let url = try #require(descriptor.publishedUrl)
                let object = try store.object("media", "\(prefix)/\((url as NSString).lastPathComponent)")
                #expect(object.status == 200 && object.headers["content-type"] == "application/octet-stream")
                #expect(Int64(object.body.count) == descriptor.publishedBytes)
                let delivered = try #require(descriptor.file.flatMap { FileManager.default.contents(atPath: $0) })
                #expect(try DeadlineBoundSuites.EncryptedPublishingTests.decrypt(object.body, descriptor.encryption) == delivered)
                let thumbnail = try #require(descriptor.thumbnail?.publishedUrl)
                let thumbnailObject = try store.object("media", "\(prefix)/\((thumbnail as NSString).lastPathComponent)")
                #expect(try DeadlineBoundSuites.EncryptedPublishingTests.decrypt(thumbnailObject.body, descriptor.thumbnail?.encryption)
                        == FileManager.default.contents(atPath: descriptor.thumbnail!.file))
            }
            // The shared result records would hold keys: none is written for encrypted work.
            let keys = try store.list("media", prefix: "\(prefix)/")
            let objects = descriptors.compactMap { $0.publishedUrl.map { "\(prefix)/\(($0 as NSString).lastPathComponent)" } }
            #expect(!objects.isEmpty && Set(objects).isSubset(of: Set(keys)), "the listing sees the objects: \(keys)")
            #expect(keys.allSatisfy { $0.hasSuffix(".aes128gcm") }, "no result record or lease: \(keys)")
        }
    }
}
