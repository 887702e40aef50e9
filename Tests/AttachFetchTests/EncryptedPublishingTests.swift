@testable import AttachFetchDevice
import EncryptedContent
import Foundation
import ResidentMemory
#if canImport(Glibc)
import Glibc
#endif
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

extension DeadlineBoundSuites {
    /// Encrypted publishing end to end: the pipeline and `serve` publish RFC 8188 objects to a
    /// directory (to SeaweedFS: `EncryptedObjectStoreTests`), and `AttachFetchDevice` fetches what the service published over
    /// real HTTP (FoundationNetworking's URLSession) and decrypts it to the very bytes delivered.
    @Suite struct EncryptedPublishingTests {
        static let secret: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }

        /// A key file of `bytes` random bytes with `mode`, in `scratch`.
        static func keyFile(_ scratch: Scratch, bytes: Int = 32, mode: mode_t = 0o600, content: [UInt8]? = nil) throws -> String {
            let path = "\(scratch.path)/media-\(UInt32.random(in: 0...UInt32.max)).key"
            try makeFile(path, Data(content ?? (0..<bytes).map { _ in UInt8.random(in: 0...255) }))
            chmod(path, mode)
            return path
        }

        /// Decrypts `ciphertext` with the descriptor's key.
        static func decrypt(_ ciphertext: Data, _ encryption: AttachmentDescriptor.Encryption?) throws -> Data {
            let key = try #require(encryption.flatMap { ContentKey(base64URL: $0.key) })
            var decoder = ContentDecoder(key: key)
            var plaintext: [UInt8] = []
            try decoder.feed(ciphertext) { plaintext += $0 }
            try decoder.finish { plaintext += $0 }
            return Data(plaintext)
        }

        /// A loopback server, in a process of its own, serving `directory` under `/media/`.
        static func startFileServer(_ directory: String) throws -> (Process, String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: builtExecutable("loopback-media-server"))
            process.arguments = [directory]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            var line = ""
            while !line.hasSuffix("\n") {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                line += String(decoding: chunk, as: UTF8.self)
            }
            return (process, line.trimmingCharacters(in: .whitespacesAndNewlines) + "/media")
        }

        @Test func everythingPublishedIsCiphertextThatDecryptsToWhatWasDeliveredAndEqualMediaIsOneObject() async throws {
            let scratch = Scratch()
            let publish = "\(scratch.path)/published"
            try FileManager.default.createDirectory(atPath: publish, withIntermediateDirectories: true)
            let out = "\(scratch.path)/out"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let batches = try await withPipeline(scratch, { configuration in
                configuration.publish = Publishing(directory: publish, baseURL: "https://media.example.test/push")
                configuration.mediaEncryption = try! MediaEncryption(secret: Self.secret)
                configuration.platforms = [.ios, .android]
            }) { pipeline in
                try await withMediaServer { server in
                    // Twice, in two batches without a cache: the same objects, not new ones.
                    var batches: [AttachmentBatch] = []
                    for round in 0..<2 {
                        batches.append(await pipeline.process(["photo.jpg", "image.webp", "clip.mp4"].map {
                            AttachmentRequest(url: "\(server.baseURL)/media/\($0)", identifier: "\($0)-\(round)")
                        }, outputDirectory: out))
                    }
                    return batches
                }
            }
            let published = try FileManager.default.contentsOfDirectory(atPath: publish).sorted()
            var objects = Set<String>()
            for descriptor in batches[0].attachments {
                #expect(descriptor.status == .ready, "\(descriptor.url): \(descriptor.reason?.message ?? "")")
                let delivered = try #require(descriptor.file.flatMap { FileManager.default.contents(atPath: $0) })
                var things: [(plaintext: Data, url: String?, bytes: Int64?, encryption: AttachmentDescriptor.Encryption?)] = [
                    (delivered, descriptor.publishedUrl, descriptor.publishedBytes, descriptor.encryption)]
                if let thumbnail = descriptor.thumbnail {
                    things.append((try #require(FileManager.default.contents(atPath: thumbnail.file)), thumbnail.publishedUrl,
                                   thumbnail.publishedBytes, thumbnail.encryption))
                }
                for variant in (descriptor.variants ?? [:]).values where variant.file != nil {
                    things.append((try #require(FileManager.default.contents(atPath: variant.file!)), variant.publishedUrl,
                                   variant.publishedBytes, variant.encryption))
                }
                #expect(things.count >= 2, "\(descriptor.url): a file and a thumbnail at least")
                for thing in things {
                    let name = try #require(thing.url.map { ($0 as NSString).lastPathComponent })
                    #expect(name.hasSuffix(".aes128gcm") && Publisher.isPublishedName(name), "the name tells nothing of the type: \(name)")
                    #expect(thing.encryption?.scheme == "aes128gcm" && thing.encryption?.recordSize == 65_536)
                    let ciphertext = try #require(FileManager.default.contents(atPath: "\(publish)/\(name)"))
                    #expect(Int64(ciphertext.count) == thing.bytes, "publishedBytes is the object's size")
                    #expect(ciphertext.range(of: thing.plaintext.prefix(64)) == nil, "no plaintext in the object")
                    #expect(try Self.decrypt(ciphertext, thing.encryption) == thing.plaintext, "\(name) decrypts to the delivered bytes")
                    objects.insert(name)
                }
                // sha256 and bytes stay the plaintext's.
                #expect(descriptor.bytes == Int64(delivered.count) && descriptor.publishedBytes! > descriptor.bytes!)
                #expect(try descriptor.sha256 == SHA256Digest.hex(of: Array(delivered)))
                #expect(descriptor.encryption?.key != descriptor.thumbnail?.encryption?.key, "a key per content")
            }
            #expect(published == objects.sorted(), "one object per content, and nothing else (no temporary files)")
            for (first, second) in zip(batches[0].attachments, batches[1].attachments) {
                #expect(first.publishedUrl == second.publishedUrl && first.encryption == second.encryption,
                        "equal media gives the same object and key")
            }
        }

        @Test func aRequestAskingForEncryptionWithoutAKeyFailsAndNothingIsPublished() async throws {
            let scratch = Scratch()
            let publish = "\(scratch.path)/published"
            try FileManager.default.createDirectory(atPath: publish, withIntermediateDirectories: true)
            let descriptor = try await withPipeline(scratch, { configuration in
                configuration.publish = Publishing(directory: publish, baseURL: "https://media.example.test/push")
            }) { pipeline in
                try await withMediaServer { server in
                    var request = AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg")
                    request.encrypt = true
                    return await pipeline.process([request]).attachments[0]
                }
            }
            #expect(descriptor.status == .failed && descriptor.reason?.code == .encryptionUnavailable)
            #expect(try FileManager.default.contentsOfDirectory(atPath: publish).isEmpty)
            // And a configuration with a key but nowhere to publish is refused.
            var configuration = AttachFetchConfiguration()
            configuration.mediaEncryption = try MediaEncryption(secret: Self.secret)
            #expect(throws: AttachFetchError.self) { try configuration.validate() }
        }

        @Test func aRewrittenPayloadOverAPNsLimitIsALintErrorSayingByHowMuch() throws {
            func descriptor(_ index: Int) -> AttachmentDescriptor {
                var d = AttachmentDescriptor(identifier: "image-\(index)", url: "https://o.test/\(index).jpg", status: .ready, timings: .init(total: 1))
                (d.sha256, d.bytes, d.fileExtension, d.uti) = (String(repeating: "a", count: 64), 1_000, "jpg", "public.jpeg")
                d.publishedUrl = "https://media.example.test/push/\(String(repeating: "b", count: 62))\(String(format: "%02d", index)).aes128gcm"
                d.encryption = .init(scheme: "aes128gcm", key: "16jxB1Rk2gNbh4n41-9wNA", recordSize: 65_536)
                return d
            }
            func rewrite(_ count: Int) throws -> Data {
                let urls = (0..<count).map { #"{"url": "https://o.test/\#($0).jpg", "url_id": "image-\#($0)"}"# }.joined(separator: ",")
                let payload = try PushPayload(data: Data(#"{"aps": {"alert": "a", "mutable-content": 1}, "com.urbanairship.media_attachment": {"urls": [\#(urls)]}}"#.utf8))
                let media = payload.media()
                #expect(media.count == count)
                return payload.rewritten(media: media, descriptors: (0..<count).map(descriptor), pretty: false)
            }
            let small = try rewrite(2)
            #expect(PushPayload.rewriteLint(small).isEmpty, "\(small.count) bytes")
            let listed = try #require(try JSONSerialization.jsonObject(with: small) as? [String: Any])
            #expect(((listed["attach-fetch"] as? [String: Any])?["attachments"] as? [Any])?.count == 2)
            let large = try rewrite(30)
            let findings = PushPayload.rewriteLint(large)
            #expect(findings.count == 1 && findings.first?.code == "payloadTooLarge" && findings.first?.severity == .error)
            #expect(findings.first?.message.contains("\(large.count - 4_096) over") == true, "\(findings.first?.message ?? "")")
        }

        @Test func aBadKeyFileIsRefusedAtStartWithoutShowingItsContent() async throws {
            let scratch = Scratch()
            let publish = "\(scratch.path)/published"
            try FileManager.default.createDirectory(atPath: publish, withIntermediateDirectories: true)
            let marker = Array("SECRET-MARKER-0123456789".utf8)
            let cases: [(String, String)] = [
                ("\(scratch.path)/missing.key", "cannot be read"),
                (try Self.keyFile(scratch, content: marker), "at least 32 random bytes"),
                (try Self.keyFile(scratch, mode: 0o644, content: marker + marker), "open to other users (mode 644)"),
                (try Self.keyFile(scratch, mode: 0o640, content: marker + marker), "open to its group (mode 640)"),
                (try Self.keyFile(scratch, mode: 0o620, content: marker + marker), "chmod 600"),
            ]
            for (file, expected) in cases {
                for command in [["--publish-dir", publish, "--public-base", "https://m.example.test", "--encrypt-media",
                                 "--media-key-file", file, "http://127.0.0.1:9/x.jpg"],
                                ["serve", "--port", "0", "--publish-dir", publish, "--public-base", "https://m.example.test",
                                 "--media-key-file", file]] {
                    let run = try await CLITests.run(command)
                    #expect(run.status != 0 && run.stderr.contains(expected), "\(command.first!): \(run.stderr)")
                    #expect(!run.stderr.contains("SECRET-MARKER"), "the key file's content is never shown")
                }
            }
            let noKey = try await CLITests.run(["--encrypt-media", "http://127.0.0.1:9/x.jpg"])
            #expect(noKey.status != 0 && noKey.stderr.contains("--encrypt-media needs --media-key-file"), "\(noKey.stderr)")
            let notPublishing = try await CLITests.run(["--encrypt-media", "--media-key-file", Self.keyFile(scratch), "http://127.0.0.1:9/x.jpg"])
            #expect(notPublishing.status != 0 && notPublishing.stderr.contains("--publish-dir or --publish-to"), "\(notPublishing.stderr)")
        }

        @Test func theDeviceFetchesWhatTheServicePublishedByteForByteAndTheKeyIsNeverLoggedOrCounted() async throws {
            let scratch = Scratch()
            let publish = "\(scratch.path)/published"
            try FileManager.default.createDirectory(atPath: publish, withIntermediateDirectories: true)
            let (files, base) = try Self.startFileServer(publish)
            defer { stopFileServer(files) }
            let keyFile = try Self.keyFile(scratch)
            let log = ServeLog()
            let (service, port) = try launchServe(["--allow-private-network", "--verbose", "--publish-dir", publish, "--public-base", base,
                                                   "--media-key-file", keyFile], environment: ["TMPDIR": scratch.path], log: log)
            defer { service.terminate(); service.waitUntilExit() }
            let api = "http://127.0.0.1:\(port)"
            try await withMediaServer { origin in
                // Per request: a plaintext call and an encrypted one; encryption is refused by a
                // service without a key (checked below with another service).
                let plain = try await Exchange.post("\(api)/v1/attachments", json: #"{"urls": ["\#(origin.baseURL)/media/photo.jpg"], "encrypt": false}"#)
                #expect(plain.status == 200)
                #expect(((plain.json["attachments"] as? [[String: Any]])?.first?["encryption"]) == nil)
                let payload = #"{"aps": {"alert": {"title": "Sale"}, "mutable-content": 1}, "image_url": "\#(origin.baseURL)/media/photo.jpg", "media_url": "\#(origin.baseURL)/media/clip.mp4"}"#
                let rewritten = try await Exchange.post("\(api)/v1/payloads?rewrite=true&encrypt=true", json: payload)
                #expect(rewritten.status == 200, "\(rewritten.text)")
                let userInfo = try #require(rewritten.json["payload"] as? [String: Any])
                #expect(userInfo["image_url"] == nil && userInfo["media_url"] == nil, "plain URL keys are gone: \(userInfo.keys)")
                let attachments = try EncryptedPayload.attachments(in: userInfo)
                #expect(attachments.map(\.fileExtension).sorted() == ["jpg", "mp4"])
                let directory = "\(scratch.path)/device"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                let fetcher = EncryptedAttachmentFetcher(directory: URL(fileURLWithPath: directory))
                let results = try await fetcher.fetch(userInfo: userInfo, deadline: Date().addingTimeInterval(20))
                for (attachment, result) in zip(attachments, results) {
                    let fetched = try result.get()
                    #expect(fetched.fileURL.pathExtension == attachment.fileExtension)
                    let original = try #require(FileManager.default.contents(atPath: "\(testMediaDirectory)/\(attachment.fileExtension == "jpg" ? "photo.jpg" : "clip.mp4")"))
                    #expect(try Data(contentsOf: fetched.fileURL) == original, "\(attachment.identifier): byte-identical")
                    #expect(fetched.typeHint == (attachment.fileExtension == "jpg" ? "public.jpeg" : "public.mpeg-4"))
                }
                // No key anywhere it could leak: the log, the metrics, the error texts.
                let keys = attachments.map(\.key) + [String(decoding: try Data(contentsOf: URL(fileURLWithPath: keyFile)).base64EncodedData(), as: UTF8.self)]
                let metrics = try await Exchange.send("GET", "\(api)/metrics")
                let wrongKey = await fetcher.fetch(EncryptedAttachment(
                    identifier: "x", url: attachments[0].url, key: ContentKey(bytes: Array(repeating: 0, count: 16))!.base64URL,
                    sha256: attachments[0].sha256, fileExtension: "jpg"))
                let texts = [log.text, metrics.text, "\(wrongKey)"]
                for key in keys { #expect(!texts.contains { $0.contains(key) }, "a key appears in a log, a metric or an error") }
                #expect(log.text.contains("/v1/payloads"), "the log was captured")
            }
            // --encrypt-media: everything is encrypted, and asking for plaintext is refused.
            let (strict, strictPort) = try launchServe(["--allow-private-network", "--publish-dir", publish, "--public-base", base,
                                                        "--encrypt-media", "--media-key-file", keyFile], environment: ["TMPDIR": scratch.path])
            defer { strict.terminate(); strict.waitUntilExit() }
            let refused = try await Exchange.post("http://127.0.0.1:\(strictPort)/v1/attachments", json: #"{"urls": ["http://127.0.0.1:9/a.jpg"], "encrypt": false}"#)
            #expect(refused.status == 400 && refused.text.contains("--encrypt-media"), "\(refused.text)")
            // No key: a valid request for encryption gets 409 notConfigured, on both routes.
            let (keyless, keylessPort) = try launchServe(["--allow-private-network"], environment: ["TMPDIR": scratch.path])
            defer { keyless.terminate(); keyless.waitUntilExit() }
            let asked = try await Exchange.post("http://127.0.0.1:\(keylessPort)/v1/attachments", json: #"{"urls": ["http://127.0.0.1:9/a.jpg"], "encrypt": true}"#)
            #expect(asked.status == 409 && asked.errorCode == "notConfigured" && asked.text.contains("media key"), "\(asked.text)")
            let askedPayload = try await Exchange.post("http://127.0.0.1:\(keylessPort)/v1/payloads?encrypt=true", json: #"{"aps": {"alert": "a", "mutable-content": 1}, "image_url": "http://127.0.0.1:9/a.jpg"}"#)
            #expect(askedPayload.status == 409 && askedPayload.errorCode == "notConfigured" && askedPayload.text.contains("media key"),
                    "\(askedPayload.text)")
        }

        @Test func theDeviceRefusesEachWrongObjectWithItsErrorAndLeavesNoFile() async throws {
            let scratch = Scratch()
            let plaintext = (0..<300_000).map { _ in UInt8.random(in: 0...255) }
            let key = ContentKey(bytes: (0..<16).map { _ in UInt8.random(in: 0...255) })!
            var encoder = try ContentEncoder(key: key, salt: Array(repeating: 5, count: 16), recordSize: 4_096)
            var ciphertext = encoder.header
            var offset = 0
            while offset < plaintext.count {
                let end = min(offset + encoder.plaintextPerRecord, plaintext.count)
                ciphertext += try encoder.seal(plaintext[offset..<end], last: end == plaintext.count)
                offset = end
            }
            var flipped = ciphertext
            flipped[10_000] ^= 0x40
            let served = "\(scratch.path)/served"
            try FileManager.default.createDirectory(atPath: served, withIntermediateDirectories: true)
            try makeFile("\(served)/good.bin", Data(ciphertext))
            try makeFile("\(served)/flipped.bin", Data(flipped))
            try makeFile("\(served)/truncated.bin", Data(ciphertext.prefix(21 + key.keyID.count + 4_096 * 10)))
            let (files, base) = try Self.startFileServer(served)
            defer { stopFileServer(files) }
            let directory = "\(scratch.path)/device"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let fetcher = EncryptedAttachmentFetcher(directory: URL(fileURLWithPath: directory), maxBytes: 200_000 * 10)
            let sha256 = try SHA256Digest.hex(of: plaintext)
            func attachment(_ name: String, key: ContentKey = key, sha256: String = sha256, bytes: Int64? = nil) -> EncryptedAttachment {
                EncryptedAttachment(identifier: name, url: URL(string: "\(base)/\(name)")!, key: key.base64URL, sha256: sha256,
                                    bytes: bytes, fileExtension: "bin")
            }
            let cases: [(EncryptedAttachment, DeviceFetchError.Code)] = [
                (attachment("good.bin", key: ContentKey(bytes: Array(repeating: 1, count: 16))!), .wrongKey),
                (attachment("flipped.bin"), .authenticationFailed),
                (attachment("truncated.bin"), .truncated),
                (attachment("good.bin", sha256: String(repeating: "0", count: 64)), .hashMismatch),
                (attachment("good.bin", bytes: 100_000), .tooLarge),
                (attachment("missing.bin"), .httpStatus),
            ]
            let results = await fetcher.fetch(cases.map(\.0), deadline: Date().addingTimeInterval(20))
            for ((attachment, code), result) in zip(cases, results) {
                guard case .failure(let error) = result else { Issue.record("\(attachment.identifier) was accepted"); continue }
                #expect(error.code == code, "\(attachment.identifier): \(error)")
                #expect(!error.message.contains(attachment.key))
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "no file is left behind")
            // The good object, with the right hash, decrypts.
            let good = try await fetcher.fetch(attachment("good.bin")).get()
            #expect(try Data(contentsOf: good.fileURL) == Data(plaintext))
            // A deadline that has passed ends a slow download with what is done: nothing, and no file.
            let late = await fetcher.fetch([EncryptedAttachment(identifier: "slow", url: URL(string: "\(base)/good.bin?delayMs=3000")!,
                                                                key: key.base64URL, sha256: sha256, fileExtension: "bin")],
                                           deadline: Date().addingTimeInterval(0.3))
            guard case .failure(let error) = late[0] else { Issue.record("a late download was accepted"); return }
            #expect(error.code == .deadlineExceeded)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == [good.fileURL.lastPathComponent])
            // A deadline is its call's: one already passed ends that call's download before it
            // starts, and leaves another call's download, running at the same time, alone.
            let slow = { (name: String) in
                EncryptedAttachment(identifier: name, url: URL(string: "\(base)/good.bin?delayMs=1000&call=\(name)")!,
                                    key: key.base64URL, sha256: sha256, fileExtension: "bin")
            }
            let (otherAttachment, passedAttachment) = (slow("other"), slow("passed"))
            async let other = fetcher.fetch([otherAttachment], deadline: Date().addingTimeInterval(30))
            // The subject: the other call's download (a second long) is under way when this call's
            // deadline fires.
            try await waitUntil("the other call's download under way") { fetcher.isDownloading(otherAttachment.url) }
            let passed = await fetcher.fetch([passedAttachment], deadline: Date().addingTimeInterval(-1))
            guard case .failure(let passedError) = passed[0] else { Issue.record("a download past its deadline was accepted"); return }
            #expect(passedError.code == .deadlineExceeded)
            let otherResult = await other[0]
            #expect((try? otherResult.get()) != nil, "the other call's download: \(otherResult)")
        }

        @Test func aVideoNearTheLimitIsDecryptedAsItStreamsInBoundedMemory() async throws {
            let scratch = Scratch()
            let video = "\(scratch.path)/big.mp4"
            // Noise at the finest quantizer (not lossless, which is High 4:4:4, a profile iOS cannot
            // play): about 47 MB that FFmpeg cannot compress, within the 50 MiB video limit.
            let ffmpeg = Process()
            ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            ffmpeg.arguments = ["-loglevel", "error", "-f", "lavfi", "-i", "nullsrc=s=640x360:r=25,geq=random(1)*255:128:128",
                                "-frames:v", "130", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "1", "-pix_fmt", "yuv420p", video]
            try ffmpeg.run()
            ffmpeg.waitUntilExit()
            let size = try #require(try FileManager.default.attributesOfItem(atPath: video)[.size] as? Int)
            #expect(size > 44_000_000 && size < 52_000_000, "\(size) bytes")
            let publish = "\(scratch.path)/published"
            try FileManager.default.createDirectory(atPath: publish, withIntermediateDirectories: true)
            let (files, base) = try Self.startFileServer(publish)
            defer { stopFileServer(files) }
            let descriptor = try await withPipeline(scratch, { configuration in
                configuration.publish = Publishing(directory: publish, baseURL: base)
                configuration.mediaEncryption = try! MediaEncryption(secret: Self.secret)
            }) { pipeline in
                try await withMediaServer(directory: scratch.path) { server in
                    await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/big.mp4")], deadline: .seconds(60)).attachments[0]
                }
            }
            #expect(descriptor.status == .ready, "\(descriptor.reason?.message ?? "")")
            let userInfo: [AnyHashable: Any] = ["attach-fetch": ["v": 1, "attachments": [try #require(PushPayload.encryptedEntry(descriptor))]]]
            let directory = "\(scratch.path)/device"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let fetcher = EncryptedAttachmentFetcher(directory: URL(fileURLWithPath: directory))
            // A small download first, so that what every download costs once (the session's
            // threads and buffers) is not counted as growth with the file's size.
            let thumbnail = try #require(descriptor.thumbnail)
            let warmUp = await fetcher.fetch(EncryptedAttachment(
                identifier: "poster", url: URL(string: try #require(thumbnail.publishedUrl))!, key: try #require(thumbnail.encryption?.key),
                sha256: try SHA256Digest.hex(of: Array(try #require(FileManager.default.contents(atPath: thumbnail.file)))),
                fileExtension: "jpg"))
            _ = try warmUp.get()
            // The peak resident size is reset, then read after the download (Linux's clear_refs).
            let before = try ResidentMemory.resetPeak()
            let results = try await fetcher.fetch(userInfo: userInfo, deadline: Date().addingTimeInterval(60))
            let growth = try ResidentMemory.peak() - before
            let fetched = try results[0].get()
            #expect(fetched.bytes == Int64(size))
            #expect(try Data(contentsOf: fetched.fileURL) == Data(contentsOf: URL(fileURLWithPath: video)))
            // Holding the file would grow by its size (over 42 MiB) at least. The device asks
            // for 4 MiB ranges, so at most one range is queued ahead of the decryption, however
            // long the decrypting thread waits for a core: a Notification Service Extension's
            // 24 MiB holds it.
            #expect(growth < 24 << 20, "peak memory grew \(growth >> 20) MiB for a \(size >> 20) MiB video")
            print("a \(size >> 20) MiB video fetched in ranges: peak memory +\(growth >> 20) MiB")
        }
    }
}

/// Stops a `startFileServer` process (SIGKILL: it may have inherited a mask blocking SIGTERM).
func stopFileServer(_ process: Process) {
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
}
