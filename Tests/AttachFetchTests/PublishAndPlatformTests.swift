import Foundation
import Testing
@testable import AttachFetch

/// Ready files stored content-addressed where devices fetch them.
@Suite struct PublishingTests {
    /// `withPipeline` publishing to `publish`.
    private func withPublishingPipeline<T: Sendable>(_ scratch: Scratch, _ publish: Scratch,
                                                     _ body: (AttachmentPipeline) async throws -> T) async throws -> T {
        try await withPipeline(scratch, { $0.publish = Publishing(directory: publish.path, baseURL: "https://media.example.test/push/") }, body)
    }

    @Test func readyFilesArePublishedOnceContentAddressedAndPublic() async throws {
        let scratch = Scratch(), publish = Scratch()
        chmod(publish.path, 0o755)
        try await withMediaServer { server in
            try await withPublishingPipeline(scratch, publish) { pipeline in
                let first = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline)
                let sha = try #require(first.sha256)
                #expect(first.publishedUrl == "https://media.example.test/push/\(sha).jpg")
                let thumbnailURL = try #require(first.thumbnail?.publishedUrl)
                let thumbnailName = (thumbnailURL as NSString).lastPathComponent
                #expect(thumbnailName.hasSuffix(".thumb.jpg"))
                #expect(publish.tree() == ["\(sha).jpg", thumbnailName].sorted())
                // The names are the contents' SHA-256 (checked by coreutils), the files public.
                #expect(try sha256sum("\(publish.path)/\(sha).jpg") == sha)
                #expect(try sha256sum("\(publish.path)/\(thumbnailName)") + ".thumb.jpg" == thumbnailName)
                #expect(fileMode("\(publish.path)/\(sha).jpg") == 0o644 && fileMode("\(publish.path)/\(thumbnailName)") == 0o644)

                // Published again (another batch, no cache): not written again, but renewed for prune.
                var old = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
                utimensat(AT_FDCWD, "\(publish.path)/\(sha).jpg", &old, 0)
                let inode = try FileManager.default.attributesOfItem(atPath: "\(publish.path)/\(sha).jpg")[.systemFileNumber] as? Int
                let second = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline)
                #expect(second.publishedUrl == first.publishedUrl)
                let attributes = try FileManager.default.attributesOfItem(atPath: "\(publish.path)/\(sha).jpg")
                #expect(attributes[.systemFileNumber] as? Int == inode, "never replaced")
                #expect(((attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0) > 1_000_000_000)
                #expect(publish.tree().count == 2)
            }
        }
    }

    @Test func aPublishingErrorFailsTheAttachmentAndLeavesNothingHalfWritten() async throws {
        let scratch = Scratch(), publish = Scratch()
        try await withMediaServer { server in
            try await withPublishingPipeline(scratch, publish) { pipeline in
                let sha = try sha256sum("\(testMediaDirectory)/photo.jpg")
                // Something that is not a file holds the name the content would get.
                try FileManager.default.createDirectory(atPath: "\(publish.path)/\(sha).jpg", withIntermediateDirectories: false)
                let blocked = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline)
                #expect(blocked.reason?.code == .ioError, "\(blocked.reason?.message ?? "ready")")
                #expect(blocked.publishedUrl == nil && blocked.file == nil)
                #expect(publish.tree() == ["\(sha).jpg"], "no temporary file remains")
                // The directory gone under the running pipeline: ioError too.
                try FileManager.default.removeItem(atPath: publish.path)
                let gone = await fetchOne("\(server.baseURL)/media/tone.mp3", pipeline)
                #expect(gone.reason?.code == .ioError)
            }
            #expect(scratch.tree() == [])
        }
    }

    @Test func aBadPublishDirectoryOrBaseURLIsAConfigurationError() throws {
        let scratch = Scratch()
        let file = "\(scratch.path)/file"
        try makeFile(file)
        for (directory, base) in [("/nonexistent/dir", "https://x.test/"), (file, "https://x.test/"),
                                  (scratch.path, "ftp://x.test/"), (scratch.path, "media")] {
            var configuration = AttachFetchConfiguration()
            configuration.temporaryDirectory = scratch.path
            configuration.publish = Publishing(directory: directory, baseURL: base)
            // Not withPipeline: the constructor must throw, so there is no pipeline to shut down.
            #expect(throws: AttachFetchError.self, "\(directory) \(base)") { try AttachmentPipeline(configuration: configuration) }
        }
    }

    @Test func twoProcessesPublishingTheSameContentAtOnceCorruptNothing() async throws {
        let publish = Scratch(), out1 = Scratch(), out2 = Scratch()
        try await withMediaServer { server in
            let url = "\(server.baseURL)/media/clip.mp4"
            func arguments(_ out: Scratch) -> [String] {
                ["--allow-private-network", "--format", "json", "--out", out.path, "--publish-dir", publish.path,
                 "--public-base", "https://media.example.test", url]
            }
            async let one = CLITests.run(arguments(out1))
            async let two = CLITests.run(arguments(out2))
            let (a, b) = try await (one, two)
            #expect(a.status == 0 && b.status == 0, "\(a.stderr) \(b.stderr)")
            let names = publish.tree()
            #expect(names.count == 2, "\(names)") // the video and its poster
            for name in names {
                let digest = String(name.prefix(64))
                #expect(try sha256sum("\(publish.path)/\(name)") == digest)
            }
            #expect(!names.contains { $0.hasPrefix(".") })
        }
    }

    @Test func pruneRemovesOnlyOldPublishedFiles() async throws {
        let publish = Scratch()
        let old = String(repeating: "a", count: 64) + ".jpg"
        let fresh = String(repeating: "b", count: 64) + ".thumb.png"
        for name in [old, fresh, "notes.txt", ".publishing-abc-1-2"] {
            try makeFile("\(publish.path)/\(name)", Data("x".utf8))
        }
        var longAgo = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        for name in [old, "notes.txt", ".publishing-abc-1-2"] { utimensat(AT_FDCWD, "\(publish.path)/\(name)", &longAgo, 0) }
        let run = try await CLITests.run(["prune", "--publish-dir", publish.path, "--older-than", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("removed 2 files"))
        #expect(publish.tree() == [fresh, "notes.txt"].sorted())
        #expect(try Publisher.prune(directory: publish.path, olderThan: .zero).files == 1)
        #expect(publish.tree() == ["notes.txt"])
        let bad = try await CLITests.run(["prune", "--publish-dir", "/nonexistent", "--older-than", "1"])
        #expect(bad.status == 2)
    }
}

/// What Android can show: a variant when the delivered file breaks its limits.
@Suite struct PlatformVariantTests {
    @Test func anImageOverOneMegabyteGetsAnAndroidVariantThatFits() async throws {
        let media = Scratch(), scratch = Scratch()
        try writeNoiseImage(path: "\(media.path)/big.jpg", width: 1200, height: 900)
        try writeNoiseImage(path: "\(media.path)/clear.png", width: 800, height: 800, png: 4)
        try await withMediaServer(directory: media.path) { server in
            let batch = try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/big.jpg"),
                                        AttachmentRequest(url: "\(server.baseURL)/media/clear.png")])
            }
            for (d, mime) in zip(batch.attachments, ["image/jpeg", "image/png"]) {
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                #expect((d.bytes ?? 0) > Platform.androidImageLimit, "the test image must be over Android's limit")
                let variant = try #require(d.variants?["android"])
                let file = try #require(variant.file)
                #expect(variant.status == nil && variant.mimeType == mime)
                #expect(fileSize(file) == variant.bytes && (variant.bytes ?? .max) <= Platform.androidImageLimit)
                #expect(try sha256sum(file) == variant.sha256)
                // libvips (independently) reads the size the descriptor states.
                let size = try #require(imageSize(file))
                #expect(size.width == variant.width && size.height == variant.height)
                // Same format, encoded again; noise with alpha only fits smaller.
                #expect(variant.transforms?.first == .reencoded)
                if mime == "image/png" { #expect(variant.transforms?.contains(.downscaled) == true) }
                #expect((file as NSString).lastPathComponent.hasPrefix("attachment-") && file.contains(".android."))
            }
        }
    }

    @Test func anAnimatedGIFBecomesItsFirstFrameAVideoItsPosterAndAudioIsUnsupported() async throws {
        let scratch = Scratch()
        try await withMediaServer { server in
            let batch = try await withPipeline(scratch, { $0.platforms = [.ios, .android] }) { pipeline in
                await pipeline.process(["animated.gif", "clip.mp4", "tone.mp3", "photo.jpg"].map {
                    AttachmentRequest(url: "\(server.baseURL)/media/\($0)")
                })
            }
            let gif = batch.attachments[0]
            #expect(gif.status == .ready && gif.mimeType == "image/gif", "iOS keeps the animation")
            let still = try #require(gif.variants?["android"])
            #expect(["image/jpeg", "image/png"].contains(still.mimeType ?? ""))
            // Not about 2:1, so cut to 2:1 by attention as well.
            let gifCropped = PictureCrop.needsTwoToOne(width: gif.width ?? 0, height: gif.height ?? 0)
            #expect(still.transforms == (gifCropped ? [.transcoded, .cropped] : [.transcoded]), "\(still)")
            // Audio has nothing Android shows; a video's Android variant is its poster, a JPEG within 1 MB.
            let audio = batch.attachments[2]
            #expect(audio.status == .ready && audio.variants?["android"]?.status == .unsupported)
            #expect(audio.variants?["android"]?.reason?.code == .unsupportedOnPlatform)
            let video = batch.attachments[1]
            let poster = try #require(video.variants?["android"], "\(video.variants ?? [:])")
            #expect(video.status == .ready && poster.status == nil && poster.mimeType == "image/jpeg", "\(poster)")
            let posterFile = try #require(poster.file)
            #expect(fileSize(posterFile) <= Platform.androidImageLimit && imageSize(posterFile) != nil)
            // Made from the poster's frame at the video's size (never enlarged), cut to 2:1 when
            // the video is not about 2:1 (AndroidPictureTests: larger clips).
            let (width, height) = (try #require(video.width), try #require(video.height))
            let cut = PictureCrop.needsTwoToOne(width: width, height: height)
            #expect(poster.width == min(width, 1024) && poster.height == (cut ? min(width, 1024) / 2 : height), "\(poster) from \(width)x\(height)")
            #expect(batch.attachments[3].variants == nil, "a small JPEG shows on Android as it is")
        }
    }

    @Test func iOSAloneIsTheDefaultAndMakesNoVariants() async throws {
        let scratch = Scratch()
        try await withMediaServer { server in
            let d = try await withPipeline(scratch) { pipeline in
                #expect(pipeline.configuration.platforms == [.ios])
                return await fetchOne("\(server.baseURL)/media/animated.gif", pipeline)
            }
            #expect(d.status == .ready && d.variants == nil)
        }
    }

    @Test func aVariantThatCannotBeMadeIsMissingAndSaysWhy() async throws {
        let media = Scratch(), scratch = Scratch()
        try writeNoiseImage(path: "\(media.path)/big.png", width: 1600, height: 1600, png: 3)
        try await withMediaServer(directory: media.path) { server in
            // One attempt is not enough to bring 7 MB of noise under 1 MB.
            let d = try await withPipeline(scratch, {
                $0.platforms = [.ios, .android]
                $0.maxNormalizeAttempts = 1
            }) { pipeline in
                // Uncropped: the variant is the whole picture, fitted.
                var request = AttachmentRequest(url: "\(server.baseURL)/media/big.png")
                request.crop = CropMode.none
                return await pipeline.process([request]).attachments[0]
            }
            #expect(d.status == .ready, "the attachment itself is fine on iOS")
            let variant = try #require(d.variants?["android"])
            #expect(variant.status == .failed && variant.file == nil)
            #expect(variant.reason?.code == .sizeLimitExceeded && variant.reason?.message.contains("Android") == true)
            #expect(scratch.tree().filter { $0.contains(".android.") || $0.contains(".variant-") } == [])
        }
    }

    /// The deadline is an instant of the pipeline's clock: moved past it by hand once the
    /// variant's decode has started, it finds the variant under way, whatever the machine's speed.
    @Test func aVariantStillBeingMadeAtTheDeadlineIsMissingWithTheDeadlineAsItsReason() async throws {
        let media = Scratch(), scratch = Scratch()
        let clock = ManualClock()
        // 9 Mpx of noise: over iOS's 10 MiB (converted to fit), and its Android variant takes
        // several encodes to come under 1 MB.
        try writeNoiseImage(path: "\(media.path)/big.jpg", width: 3000, height: 3000)
        try await withMediaServer(directory: media.path) { server in
            let url = "\(server.baseURL)/media/big.jpg"
            let (made, late, tried) = try await withPipeline(scratch, {
                $0.platforms = [.ios, .android]
                $0.clock = clock.clock
            }) { pipeline -> (AttachmentDescriptor, AttachmentDescriptor?, Int) in
                // The clock standing still: every stage ends, the variant last of the image decodes.
                let first = pipeline.decodesStarted.images
                let made = await fetchOne(url, pipeline, deadline: .seconds(30))
                let decodes = pipeline.decodesStarted.images - first
                var late: AttachmentDescriptor?
                var tried = 0
                // A variant that ends before the clock is moved (a stalled test thread) is made in
                // time, which is right but tests nothing: then once more, three times at most.
                while late == nil && tried < 3 {
                    tried += 1
                    let before = pipeline.decodesStarted.images
                    let attempt = Task { await fetchOne(url, pipeline, deadline: .seconds(30)) }
                    defer { attempt.cancel() }
                    try await waitUntil("the variant's decode to start") { pipeline.decodesStarted.images >= before + decodes }
                    clock.advance(by: .seconds(30))
                    let answer = await attempt.value
                    #expect(answer.status == .ready, "\(answer.reason?.message ?? "")")
                    if answer.variants?["android"]?.status == .failed { late = answer }
                }
                return (made, late, tried)
            }
            #expect(made.status == .ready && made.skippedAtDeadline == nil, "\(made.reason?.message ?? "")")
            #expect(made.variants?["android"]?.status == nil && made.variants?["android"]?.file != nil, "made")
            let variant = try #require(late?.variants?["android"], "the variant was made in time in \(tried) tries")
            #expect(variant.status == .failed && variant.reason?.code == .deadlineExceeded, "\(variant)")
            #expect(variant.file == nil)
            // The thumbnail came before the variant: it is made, and only the variants are named.
            #expect(late?.thumbnail?.file != nil)
            #expect(late?.skippedAtDeadline == ["variants"])
            // The pipeline is shut down: no worker writes any more, and the late output's removal
            // may still be under way. A removal that never comes fails the wait and the check.
            try await waitUntil("the late variant's output to be removed") { scratch.tree().allSatisfy { !$0.contains(".variant-") } }
            #expect(scratch.tree().filter { $0.contains(".variant-") } == [], "late output is removed")
        }
    }
}

/// `--payload --rewrite`: every key gets the published file its platforms can show.
@Suite struct PayloadRewriteTests {
    @Test func eachKeyGetsThePublishedFileItsPlatformsCanShowFetchedOnce() async throws {
        let media = Scratch(), publish = Scratch(), out = Scratch()
        try writeNoiseImage(path: "\(media.path)/big.jpg", width: 1200, height: 900)
        let origin = try CachingOrigin(directory: media.path)
        defer { origin.shutdown() }
        let big = origin.url("big.jpg")
        let payload = fcmMessage(shared: big, android: big, apns: big, data: origin.url("gone.jpg"))
        let run = try await CLITests.run(["--allow-private-network", "--payload", "-", "--out", out.path, "--publish-dir", publish.path,
                                          "--public-base", "https://media.example.test/p", "--rewrite"], stdin: payload)
        #expect(run.status == 1, "one medium is not ready: \(run.stderr)")
        #expect(origin.requests("big.jpg") == 1, "one URL under three keys is fetched once")
        let rewritten = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        // Printed compact on one line, byte for byte what the lint measures and APNs counts.
        #expect(run.stdout.hasSuffix("}\n") && !run.stdout.dropLast().contains("\n"))
        #expect(Data(run.stdout.dropLast().utf8)
                == (try JSONSerialization.data(withJSONObject: rewritten, options: [.sortedKeys, .withoutEscapingSlashes])))
        let message = try #require(rewritten["message"] as? [String: Any])
        let androidURL = try #require(((message["android"] as? [String: Any])?["notification"] as? [String: Any])?["image"] as? String)
        let sharedURL = try #require((message["notification"] as? [String: Any])?["image"] as? String)
        let apnsURL = try #require(((message["apns"] as? [String: Any])?["fcm_options"] as? [String: Any])?["image"] as? String)
        #expect(message["data"] == nil, "media that is not ready is removed, and the object it emptied with it")
        // The report went to standard error, with the variant's published URL.
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stderr.utf8)) as? [String: Any])
        let attachments = try #require(report["attachments"] as? [[String: Any]])
        let ready = try #require(attachments.first { $0["payloadPath"] as? String == "message.apns.fcm_options.image" })
        let variant = try #require((ready["variants"] as? [String: Any])?["android"] as? [String: Any])
        #expect(apnsURL == ready["publishedUrl"] as? String, "iOS reads the delivered file")
        #expect(androidURL == variant["publishedUrl"] as? String, "Android reads the variant")
        #expect(sharedURL == androidURL, "a key both read gets the file both can show")
        // Every URL written into the payload names a published file of the right size.
        for url in [androidURL, apnsURL] {
            let path = "\(publish.path)/\((url as NSString).lastPathComponent)"
            #expect(FileManager.default.fileExists(atPath: path))
        }
        #expect(fileSize("\(publish.path)/\((androidURL as NSString).lastPathComponent)") <= Platform.androidImageLimit)
        #expect(fileSize("\(publish.path)/\((apnsURL as NSString).lastPathComponent)") > Platform.androidImageLimit)
    }

    @Test func lintSaysWhatAndroidWillNotShow() async throws {
        let media = Scratch()
        try writeNoiseImage(path: "\(media.path)/big.jpg", width: 1200, height: 900)
        try FileManager.default.copyItem(atPath: "\(testMediaDirectory)/clip.mp4", toPath: "\(media.path)/clip.mp4")
        try FileManager.default.copyItem(atPath: "\(testMediaDirectory)/photo.jpg", toPath: "\(media.path)/photo.jpg")
        try await withMediaServer(directory: media.path) { server in
            let payload = fcmMessage(shared: "\(server.baseURL)/media/clip.mp4", android: "\(server.baseURL)/media/big.jpg",
                                          apns: "\(server.baseURL)/media/big.jpg", data: "\(server.baseURL)/media/photo.jpg")
            let run = try await CLITests.run(["--allow-private-network", "--format", "json", "--payload", "-"], stdin: payload)
            let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            let lint = try #require(report["lint"] as? [[String: Any]])
            let found = Set(lint.map { "\($0["code"]!) \($0["path"]!)" })
            #expect(found.contains("androidImageTooLarge message.android.notification.image"), "\(found)")
            #expect(found.contains("unsupportedOnPlatform message.notification.image"), "\(found)")
            #expect(!found.contains("androidImageTooLarge message.apns.fcm_options.image"), "iOS reads that key")
            #expect(!found.contains { $0.hasPrefix("androidImageTooLarge message.data") }, "a small image is fine")
        }
    }

    @Test func rewriteNeedsAPayloadAndPublishing() async throws {
        for arguments in [["--rewrite", "http://127.0.0.1:1/a.jpg"],
                          ["--rewrite", "--payload", "/dev/null"],
                          ["--publish-dir", "/tmp", "http://127.0.0.1:1/a.jpg"],
                          ["--platforms", "ios,windows", "http://127.0.0.1:1/a.jpg"]] {
            let run = try await CLITests.run(arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
        }
    }
}
