import AttachFetch
import AttachFetchDevice
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

    /// Airship reads its own thumbnail options: the rewrite adds the square attach-fetch chose
    /// (`options.crop`) and a video's poster time (`options.time`) where the payload gives
    /// none, keeps the payload's own, and the encrypted entry carries the same as Apple's keys.
    @Test func airshipsOptionsGetTheChosenSquareAndPosterTime() throws {
        let plain = try PushPayload(data: Data(#"{"aps": {"alert": "a", "mutable-content": 1}, "com.urbanairship.media_attachment": {"url": "https://o.test/v.mp4", "options": {"hidden": false}}}"#.utf8))
        var video = Self.ready("v", url: "https://o.test/v.mp4", published: "https://media.example.test/p/v.mp4", encrypted: false)
        video.kind = .video
        video.thumbnailClip = try ClippingRectangle(x: 0.125, y: 0, width: 0.5625, height: 1)
        video.thumbnail = .init(file: "", width: 180, height: 320, time: 1.5)
        let rewritten = try Self.object(plain.rewritten(media: plain.media(), descriptors: [video], pretty: false))
        let attachment = try #require(rewritten["com.urbanairship.media_attachment"] as? [String: Any])
        let options = try #require(attachment["options"] as? [String: Any])
        let crop = try #require(options["crop"] as? [String: Any])
        #expect(crop["x"] as? Double == 0.125 && crop["width"] as? Double == 0.5625 && crop["height"] as? Double == 1)
        #expect(options["time"] as? Double == 1.5 && options["hidden"] as? Bool == false)
        #expect(attachment["url"] as? String == "https://media.example.test/p/v.mp4")
        // The payload's own crop wins.
        let own = try PushPayload(data: Data(#"{"aps": {"alert": "a", "mutable-content": 1}, "com.urbanairship.media_attachment": {"url": "https://o.test/v.mp4", "options": {"crop": {"x": 0, "y": 0, "width": 1, "height": 1}, "time": 0}}}"#.utf8))
        var ownVideo = video
        ownVideo.options = own.media()[0].options
        let kept = try Self.object(own.rewritten(media: own.media(), descriptors: [ownVideo], pretty: false))
        let keptOptions = try #require((kept["com.urbanairship.media_attachment"] as? [String: Any])?["options"] as? [String: Any])
        #expect((keptOptions["crop"] as? [String: Any])?["width"] as? Double == 1 && keptOptions["time"] as? Double == 0, "\(keptOptions)")
        // Encrypted, the extension gets them as Apple's keys.
        var encrypted = video
        encrypted.encryption = .init(scheme: "aes128gcm", key: "16jxB1Rk2gNbh4n41-9wNA", recordSize: 65_536)
        let sealed = try Self.object(plain.rewritten(media: plain.media(), descriptors: [encrypted], pretty: false))
        let entry = try #require(((sealed[PushPayload.encryptedMediaKey] as? [String: Any])?["attachments"] as? [[String: Any]])?.first)
        let apple = try #require(entry["options"] as? [String: Any])
        #expect(apple["UNNotificationAttachmentOptionsThumbnailTimeKey"] as? Double == 1.5)
        #expect((apple["UNNotificationAttachmentOptionsThumbnailClippingRectKey"] as? [String: Any])?["Width"] as? Double == 0.5625)
    }
    /// Plain media under a key with no vendor field for options keeps its URL there, and the
    /// square and poster time attach-fetch chose are listed under `attach-fetch.plain`, which
    /// the device library reads back by URL; the payload's own options add no entry.
    @Test func plainMediasChosenOptionsAreListedForTheDeviceLibrary() throws {
        let payload = try PushPayload(data: Data(#"{"aps": {"alert": "a", "mutable-content": 1}, "image_url": "https://o.test/v.mp4", "att": {"id": "https://o.test/p.jpg"}}"#.utf8))
        let media = payload.media()
        var video = Self.ready(media[0].identifier, url: media[0].url, published: "https://media.example.test/p/v.mp4", encrypted: false)
        video.kind = .video
        video.thumbnailClip = try ClippingRectangle(x: 0.125, y: 0, width: 0.5625, height: 1)
        video.thumbnail = .init(file: "", width: 180, height: 320, time: 1.5)
        // A picture whose payload gave its own options: nothing to add.
        var picture = Self.ready(media[1].identifier, url: media[1].url, published: "https://media.example.test/p/p.jpg", encrypted: false)
        picture.thumbnailClip = try ClippingRectangle(x: 0, y: 0, width: 1, height: 1)
        picture.options = AttachmentOptions(clippingRect: .init(x: 0, y: 0, width: 1, height: 1))
        let data = payload.rewritten(media: media, descriptors: [video, picture], pretty: false)
        let rewritten = try Self.object(data)
        #expect(rewritten["image_url"] as? String == "https://media.example.test/p/v.mp4", "the URL stays at its key")
        let block = try #require(rewritten[PushPayload.encryptedMediaKey] as? [String: Any])
        #expect((block["attachments"] as? [Any])?.isEmpty == true, "an older library still reads the block: no encrypted entry")
        #expect((block["plain"] as? [Any])?.count == 1, "\(block)")
        // What the extension's library reads.
        let userInfo = try #require(try JSONSerialization.jsonObject(with: data) as? [AnyHashable: Any])
        #expect(try EncryptedPayload.attachments(in: userInfo).isEmpty)
        let listed = try EncryptedPayload.plainAttachmentOptions(in: userInfo)
        let options = try #require(listed.first { $0.url.absoluteString == "https://media.example.test/p/v.mp4" }?.thumbnailOptions)
        #expect(options.time == 1.5 && options.clippingRect?.x == 0.125 && options.clippingRect?.width == 0.5625 && options.clippingRect?.height == 1,
                "\(options)")
        #expect(listed.count == 1)
        // A block with a malformed plain entry is said to be, not read halfway.
        #expect(throws: DeviceFetchError.self) {
            try EncryptedPayload.plainAttachmentOptions(in: ["attach-fetch": ["v": 1, "attachments": [], "plain": [["url": 3]]]])
        }
    }
}
