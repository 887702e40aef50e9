import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

/// Payload fixtures shaped like each provider's real ones, with `{{BASE}}` for the server.
let payloadDirectory: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Payloads").path

func loadPayload(_ name: String, base: String = "http://127.0.0.1:9") throws -> (Data, PushPayload) {
    let text = try String(contentsOfFile: "\(payloadDirectory)/\(name)", encoding: .utf8)
        .replacingOccurrences(of: "{{BASE}}", with: base)
    let data = Data(text.utf8)
    return (data, try PushPayload(data: data))
}

extension DeadlineBoundSuites {
    // Serialized: a test times an avatar against its own request timeout.
    @Suite(.serialized) struct PayloadTests {
        @Test(arguments: [
            ("apns-custom-key.json", ["image_url"], "apns"),
            ("fcm-apns-delivered.json", ["fcm_options.image"], "fcm"),
            ("fcm-v1-message.json", ["message.apns.fcm_options.image", "message.notification.image",
                                      // FCM v1's Android key.
                                      "message.android.notification.image"], "fcm"),
            ("fcm-data.json", ["message.data.image"], "fcm"),
            ("onesignal.json", ["att.id", "custom.a.communication.avatar_url"], "onesignal"),
            ("onesignal-os-data.json", ["os_data.att.clip", "os_data.att.hero"], "onesignal"),
            ("airship.json", ["\"com.urbanairship.media_attachment\".url"], "airship"),
            ("airship-urls.json", ["\"com.urbanairship.media_attachment\".urls[0].url", "\"com.urbanairship.media_attachment\".urls[1].url",
                                   "\"com.urbanairship.media_attachment\".urls[2].url"], "airship"),
            ("braze.json", ["ab.att.url"], "braze"),
            ("clevertap.json", ["ct_mediaUrl"], "clevertap"),
            ("iterable.json", ["itbl.attachment-url"], "iterable"),
            ("customerio.json", ["CIO.push.image"], "customerio"),
            ("batch.json", ["\"com.batch\".at.u"], "batch"),
        ])
        func findsMediaWhereEachProviderPutsIt(file: String, paths: [String], provider: String) throws {
            let (_, payload) = try loadPayload(file)
            let media = payload.media()
            #expect(media.map(\.path) == paths)
            #expect(media.allSatisfy { $0.provider == provider })
            #expect(media.allSatisfy { $0.url.hasPrefix("http://127.0.0.1:9/") })
        }

        @Test func unknownStructuresAreNotSearched() throws {
            let (_, payload) = try loadPayload("unknown-structure.json")
            #expect(payload.media().isEmpty)
        }

        @Test func extraKeyPathsAreSearched() throws {
            let (_, payload) = try loadPayload("custom-key.json")
            #expect(payload.media().isEmpty)
            let media = payload.media(extraKeyPaths: ["data.media.url", "data.nothing.here"])
            #expect(media.map(\.path) == ["data.media.url"])
            #expect(media.first?.provider == "custom")
        }

        @Test func providerIdsBecomeIdentifiersAndAvatarsAreMarked() throws {
            let (_, onesignal) = try loadPayload("onesignal.json")
            let media = onesignal.media()
            #expect(media.map(\.identifier) == ["id", "avatar"])
            #expect(media.map(\.role) == [.attachment, .avatar])
            let (_, airship) = try loadPayload("airship-urls.json")
            #expect(airship.media().map(\.identifier) == ["hero", "missing", "jingle"])
        }

        @Test func airshipOptionsBecomeUNNotificationAttachmentOptions() throws {
            let (_, payload) = try loadPayload("airship.json")
            let media = try #require(payload.media().first)
            #expect(media.clip == (try ClippingRectangle(x: 0.25, y: 0.25, width: 0.5, height: 0.5)))
            let options = try #require(media.options)
            let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(options)) as? [String: Any])
            #expect(Set(object.keys) == ["UNNotificationAttachmentOptionsThumbnailClippingRectKey",
                                         "UNNotificationAttachmentOptionsThumbnailTimeKey",
                                         "UNNotificationAttachmentOptionsThumbnailHiddenKey"])
            let rect = try #require(object["UNNotificationAttachmentOptionsThumbnailClippingRectKey"] as? [String: Double])
            #expect(rect == ["X": 0.25, "Y": 0.25, "Width": 0.5, "Height": 0.5])
            #expect(object["UNNotificationAttachmentOptionsThumbnailTimeKey"] as? Double == 2.5)
            #expect(object["UNNotificationAttachmentOptionsThumbnailHiddenKey"] as? Bool == false)
        }

        @Test func lintFindsEverythingThatStopsADeviceFromShowingMedia() throws {
            let (_, payload) = try loadPayload("lint-problems.json")
            let findings = payload.lint(media: payload.media())
            #expect(Set(findings.map(\.code)) == ["missingMutableContent", "noAlert", "contentAvailableWithoutAlert",
                                                  "invalidInterruptionLevel", "relevanceScoreOutOfRange", "payloadTooLarge",
                                                  "nonHTTPMediaURL"])
            #expect(findings.first { $0.code == "nonHTTPMediaURL" }?.path == "image_url")
            #expect(findings.first { $0.code == "missingMutableContent" }?.severity == .error)
            #expect(findings.first { $0.code == "contentAvailableWithoutAlert" }?.severity == .warning)
        }

        @Test func cleanPayloadsHaveNoFindingsAndTwoKeysAreFlagged() throws {
            for file in ["apns-custom-key.json", "onesignal.json", "airship.json", "airship-urls.json", "braze.json", "batch.json"] {
                let (_, payload) = try loadPayload(file)
                #expect(payload.lint(media: payload.media()).isEmpty, "\(file)")
            }
            let (_, twoKeys) = try loadPayload("apns-two-keys.json")
            #expect(twoKeys.lint(media: twoKeys.media()).map(\.code) == ["multipleMediaKeys"])
            let (_, fcm) = try loadPayload("fcm-v1-message.json")
            #expect(fcm.lint(media: fcm.media()).isEmpty, "Firebase's keys for one image, one URL")
        }

        /// The shapes Firebase documents for an image notification (HTTP v1 API, "Send an image in
        /// the notification payload"): FCM builds the APNs alert from `message.notification`.
        @Test func firebasesCanonicalMessagesLintClean() throws {
            for file in ["fcm-notification-only.json", "fcm-notification-apns-override.json", "fcm-v1-message.json", "fcm-legacy.json"] {
                let (_, payload) = try loadPayload(file)
                let findings = payload.lint(media: payload.media())
                #expect(findings.isEmpty, "\(file): \(findings.map { "\($0.code) at \($0.path)" })")
            }
            // The data-only message is the silent push: no alert, no extension.
            let (_, dataOnly) = try loadPayload("fcm-data-only.json")
            let silent = dataOnly.lint(media: dataOnly.media())
            #expect(silent.map(\.code) == ["noAlert"] && silent[0].path == "message.apns.payload.aps.alert")
            // Different URLs under Firebase's keys are still two images for one notification.
            let (_, twoImages) = try loadPayload("fcm-two-images.json")
            let warned = twoImages.lint(media: twoImages.media())
            #expect(warned.map(\.code) == ["multipleMediaKeys"])
            #expect(warned.allSatisfy { !$0.path.isEmpty }, "every finding says where")
            let (_, twoKeys) = try loadPayload("apns-two-keys.json")
            #expect(twoKeys.lint(media: twoKeys.media()).allSatisfy { !$0.path.isEmpty })
        }

        @Test func invalidPayloadsAreRefused() {
            #expect(throws: AttachFetchError.self) { try PushPayload(data: Data("[1,2]".utf8)) }
            #expect(throws: AttachFetchError.self) { try PushPayload(data: Data("not json".utf8)) }
        }

        @Test("avatarsGetASquareThumbnailAndTheirOwnTimeout, within 300 ms of slack") func avatarsGetASquareThumbnailAndTheirOwnTimeout() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, {
                $0.avatarTimeout = .milliseconds(600)
                $0.timeout.stall = .seconds(5)
            }) { pipeline in
                try await withMediaServer { server in
                    let (_, payload) = try loadPayload("onesignal.json", base: server.baseURL)
                    let batch = await pipeline.process(payload.media().map { $0.request() })
                    let attachment = batch.attachments[0], avatar = batch.attachments[1]
                    #expect(attachment.role == .attachment && avatar.role == .avatar)
                    #expect(avatar.payloadPath == "custom.a.communication.avatar_url")
                    #expect(avatar.status == .ready)
                    #expect(avatar.width == 500 && avatar.height == 1000)
                    #expect(avatar.thumbnail?.width == 320 && avatar.thumbnail?.height == 320)
                    // An avatar must be an image, and its timeout is the avatar timeout.
                    let audio = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/tone.mp3", role: .avatar)])
                    #expect(audio.attachments[0].reason?.code == .unsupportedType)
                    let started = ContinuousClock.now
                    let slow = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/fault/drip", role: .avatar)])
                    #expect(slow.attachments[0].reason?.code == .timeout)
                    #expect(ContinuousClock.now - started < .milliseconds(600) + timingSlack)
                }
            }
        }

        @Test func cliProcessesAPayloadAndReportsLint() async throws {
            let out = Scratch()
            let scratch = Scratch()
            try await withMediaServer { server in
                let (data, _) = try loadPayload("airship.json", base: server.baseURL)
                let file = "\(scratch.path)/payload.json"
                try data.write(to: URL(fileURLWithPath: file))
                let run = try await CLITests.run(["--allow-private-network", "--format", "json", "--out", out.path, "--payload", file])
                #expect(run.status == 0, "\(run.stderr)")
                let object = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
                let attachment = try #require((object["attachments"] as? [[String: Any]])?.first)
                #expect(attachment["role"] as? String == "attachment")
                #expect(attachment["payloadPath"] as? String == "\"com.urbanairship.media_attachment\".url")
                #expect((attachment["options"] as? [String: Any])?["UNNotificationAttachmentOptionsThumbnailTimeKey"] as? Double == 2.5)
                // The payload's crop is the thumbnail's clip: the center of 480x320 is 240x160 (never enlarged).
                let thumbnail = try #require(attachment["thumbnail"] as? [String: Any])
                #expect(thumbnail["width"] as? Int == 240 && thumbnail["height"] as? Int == 160)
                // Only App Transport Security's warning about the loopback server's plain http.
                let lintCodes = (object["lint"] as? [[String: Any]])?.compactMap { $0["code"] as? String }
                #expect(lintCodes == ["atsNotCompliant"])

                let (bad, _) = try loadPayload("lint-problems.json", base: server.baseURL)
                let badFile = "\(scratch.path)/bad.json"
                try bad.write(to: URL(fileURLWithPath: badFile))
                let table = try await CLITests.run(["--allow-private-network", "--format", "table", "--payload", badFile])
                #expect(table.status == 1)
                #expect(table.stdout.contains("Payload lint:"))
                #expect(table.stdout.contains("missingMutableContent"))
            }
        }

        @Test func stripFailedPrintsThePayloadWithoutMediaThatWillNotShow() async throws {
            let out = Scratch()
            try await withMediaServer { server in
                let (data, _) = try loadPayload("airship-urls.json", base: server.baseURL)
                let run = try await CLITests.run(["--allow-private-network", "--payload", "-", "--strip-failed", "--out", out.path],
                                                 stdin: String(decoding: data, as: UTF8.self))
                #expect(run.status == 1) // one attachment is not ready
                let stripped = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
                let urls = try #require((stripped["com.urbanairship.media_attachment"] as? [String: Any])?["urls"] as? [[String: Any]])
                #expect(urls.map { $0["url_id"] as? String } == ["hero", "jingle"])
                #expect((stripped["aps"] as? [String: Any])?["mutable-content"] as? Int == 1)
                #expect(run.stderr.contains("httpStatus")) // the report went to standard error
            }
        }

        @Test func payloadUsageErrors() async throws {
            let run = try await CLITests.run(["--payload", "/nonexistent.json"])
            #expect(run.status == 2)
            let mixed = try await CLITests.run(["--payload", "-", "http://127.0.0.1:1/a.jpg"])
            #expect(mixed.status == 2 && mixed.stderr.contains("cannot be combined"))
            let strip = try await CLITests.run(["--strip-failed", "http://127.0.0.1:1/a.jpg"])
            #expect(strip.status == 2 && strip.stderr.contains("--strip-failed needs --payload"))
            let notJSON = try await CLITests.run(["--payload", "-"], stdin: "hello")
            #expect(notJSON.status == 2 && notJSON.stderr.contains("not a JSON object"))
        }

        /// The JSON numbers 0 and 1 are numbers, not booleans (Foundation bridges both to NSNumber).
        @Test func zeroAndOneAreNumbersNotBooleans() throws {
            let payload = try PushPayload(data: Data("""
                {"aps": {"alert": "Hi", "mutable-content": 1, "relevance-score": 1},
                 "com.urbanairship.media_attachment": {"url": "https://x.test/a.jpg", "options": {"crop": {"x": 0, "y": 0, "width": 1, "height": 0.5}}}}
                """.utf8))
            let media = payload.media()
            #expect(media.first?.clip == (try ClippingRectangle(x: 0, y: 0, width: 1, height: 0.5)))
            #expect(!payload.lint(media: media).contains { $0.code == "relevanceScoreOutOfRange" })
            let flagged = try PushPayload(data: Data(#"{"aps": {"alert": "Hi", "relevance-score": true}}"#.utf8))
            #expect(flagged.lint(media: []).contains { $0.code == "relevanceScoreOutOfRange" })
        }
    }
}
