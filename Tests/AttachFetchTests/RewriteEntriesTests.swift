import AttachFetch
import Foundation
import Testing

/// What the rewrite keeps and removes: every entry with an id of its own keeps it (content that
/// is the same shares one object and key), and a container the rewrite emptied goes with it.
@Suite struct RewriteEntriesTests {
    static func ready(_ identifier: String, url: String, published: String, encrypted: Bool) -> AttachmentDescriptor {
        var d = AttachmentDescriptor(identifier: identifier, url: url, status: .ready, timings: .init(total: 1))
        (d.sha256, d.bytes, d.fileExtension, d.uti, d.kind) = (String(repeating: "a", count: 64), 1_000, "jpg", "public.jpeg", .image)
        d.publishedUrl = published
        if encrypted { d.encryption = .init(scheme: "aes128gcm", key: "16jxB1Rk2gNbh4n41-9wNA", recordSize: 65_536) }
        return d
    }

    static func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func everyOneSignalIdKeepsItsEntryWhenTheirContentIsTheSame() throws {
        let ids = (0..<18).map { "img\($0)" }
        let att = ids.map { #""\#($0)": "https://o.test/\#($0).jpg""# }.joined(separator: ", ")
        let payload = try PushPayload(data: Data(#"{"aps": {"alert": "a", "mutable-content": 1}, "att": {\#(att)}}"#.utf8))
        let media = payload.media()
        #expect(media.count == 18)
        // Eighteen URLs serving the same bytes: one published object, one key.
        let shared = "https://media.example.test/p/\(String(repeating: "c", count: 64)).aes128gcm"
        let descriptors = media.map { Self.ready($0.identifier, url: $0.url, published: shared, encrypted: true) }
        let rewritten = try Self.object(payload.rewritten(media: media, descriptors: descriptors, pretty: false))
        let entries = try #require((rewritten[PushPayload.encryptedMediaKey] as? [String: Any])?["attachments"] as? [[String: Any]])
        #expect(entries.compactMap { $0["id"] as? String }.sorted() == ids.sorted(), "\(entries.map { $0["id"] ?? "-" })")
        #expect(Set(entries.compactMap { $0["url"] as? String }) == [shared])
        #expect(Set(entries.compactMap { $0["key"] as? String }).count == 1)
        // Every URL left its key, and `att`, emptied by that, went too.
        #expect(rewritten["att"] == nil, "\(rewritten.keys.sorted())")
    }

    @Test func oneURLUnderSeveralKeysWithoutIdsStaysOneEntry() throws {
        let payload = try PushPayload(data: Data("""
            {"message": {"notification": {"title": "t", "image": "https://o.test/a.jpg"},
                         "apns": {"payload": {"aps": {"mutable-content": 1}}, "fcm_options": {"image": "https://o.test/a.jpg"}}}}
            """.utf8))
        let media = payload.media()
        #expect(media.count == 2)
        let published = "https://media.example.test/p/\(String(repeating: "d", count: 64)).aes128gcm"
        let descriptors = media.map { Self.ready($0.identifier, url: $0.url, published: published, encrypted: true) }
        let rewritten = try Self.object(payload.rewritten(media: media, descriptors: descriptors, pretty: false))
        let apns = try #require((rewritten["message"] as? [String: Any])?["apns"] as? [String: Any])
        let block = try #require((apns["payload"] as? [String: Any])?[PushPayload.encryptedMediaKey] as? [String: Any])
        #expect((block["attachments"] as? [Any])?.count == 1, "\(block)")
        #expect(apns["fcm_options"] == nil, "fcm_options held only the image: emptied, removed")
    }

    @Test func aContainerTheRewriteEmptiedGoesAndOneEmptyBeforeStays() throws {
        let payload = try PushPayload(data: Data("""
            {"message": {"notification": {"title": "t"},
                         "android": {"notification": {"image": "https://o.test/gone.jpg"}},
                         "apns": {"payload": {"aps": {"mutable-content": 1}}, "fcm_options": {"image": "https://o.test/ok.jpg"}},
                         "data": {}, "webpush": {"headers": {}}}}
            """.utf8))
        let media = payload.media()
        let descriptors = media.map { item -> AttachmentDescriptor in
            item.url.hasSuffix("ok.jpg")
                ? Self.ready(item.identifier, url: item.url, published: "https://media.example.test/p/ok.jpg", encrypted: false)
                : AttachmentDescriptor(identifier: item.identifier, url: item.url, status: .failed, timings: .init(total: 1))
        }
        let rewritten = try Self.object(payload.rewritten(media: media, descriptors: descriptors, pretty: false))
        let message = try #require(rewritten["message"] as? [String: Any])
        #expect(message["android"] == nil, "android.notification held only the failed image: both emptied, both removed")
        #expect((message["data"] as? [String: Any])?.isEmpty == true, "empty before: left alone")
        #expect(((message["webpush"] as? [String: Any])?["headers"] as? [String: Any])?.isEmpty == true)
        #expect(((message["apns"] as? [String: Any])?["fcm_options"] as? [String: Any])?["image"] as? String
                == "https://media.example.test/p/ok.jpg")
        // --strip-failed shares the rule.
        let stripped = try Self.object(payload.removing(media.filter { $0.url.hasSuffix("gone.jpg") }.map(\.entry)))
        #expect((stripped["message"] as? [String: Any])?["android"] == nil)
    }
}
