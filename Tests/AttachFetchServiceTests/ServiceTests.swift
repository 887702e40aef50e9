import AttachFetch
@testable import AttachFetchService
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Testing
import ServiceTestHelpers
import TestHelpers

extension ServiceTimerSuites {
    // Serialized: tests time batch-file retention, drains and cancellations against their bounds.
    /// The service in this process over real HTTP: its routes, errors and token check (files,
    /// payloads, metrics and logs in ServiceTests+Files.swift).
    @Suite(.serialized) struct ServiceTests {
        @Test func everyRouteAnswersWithItsStatus() async throws {
            let scratch = Scratch()
            let service = try await RunningServer.start(scratch) { $0.maxDeadline = .seconds(5) }
            try await withMediaServer { media in
                #expect(try await Exchange.send("GET", "\(service.base)/healthz").status == 200)
                #expect(try await Exchange.send("HEAD", "\(service.base)/healthz").status == 200)
                #expect(try await Exchange.send("GET", "\(service.base)/readyz").status == 200)
                let missing = try await Exchange.send("GET", "\(service.base)/nowhere")
                #expect(missing.status == 404 && missing.errorCode == "notFound")
                let wrongMethod = try await Exchange.send("GET", "\(service.base)/v1/attachments")
                #expect(wrongMethod.status == 405 && wrongMethod.errorCode == "methodNotAllowed")
                #expect(wrongMethod.headers["allow"] == "POST")
                #expect(try await Exchange.send("GET", "\(service.base)/media/\(String(repeating: "a", count: 64)).jpg").status == 404,
                        "no publishing: no media route")

                let urls = try await Exchange.post("\(service.base)/v1/attachments",
                                                   json: #"{"urls": ["\#(media.baseURL)/media/photo.jpg", "\#(media.baseURL)/media/tone.mp3"], "deadlineMs": 999999}"#)
                #expect(urls.status == 200, "\(urls.text)")
                let attachments = try #require(urls.json["attachments"] as? [[String: Any]])
                #expect(attachments.map { $0["status"] as? String } == ["ready", "ready"])
                #expect(urls.json["deadlineMs"] as? Int == 5000, "clipped to --max-deadline, not refused")
                let file = try #require(attachments[0]["file"] as? String)
                #expect(FileManager.default.fileExists(atPath: file) && file.hasPrefix(scratch.path))

                let shaped = try await Exchange.post("\(service.base)/v1/attachments", json: """
                    {"requests": [{"url": "\(media.baseURL)/media/photo.jpg", "identifier": "hero", "role": "avatar",
                                   "clip": {"x": 0, "y": 0, "width": 0.5, "height": 0.5}, "thumbnailTime": 1}]}
                    """, headers: ["X-Deadline-Ms": "1500"])
                let hero = try #require((shaped.json["attachments"] as? [[String: Any]])?.first, "\(shaped.status) \(shaped.text)")
                #expect(hero["identifier"] as? String == "hero" && hero["role"] as? String == "avatar")
                #expect(shaped.json["deadlineMs"] as? Int == 1500)
                #expect((hero["thumbnail"] as? [String: Any])?["width"] as? Int == (hero["thumbnail"] as? [String: Any])?["height"] as? Int,
                        "an avatar's thumbnail is square")
            }
            await service.stop()
            #expect(scratch.tree() == [], "stopping removes the service's files")
        }

        @Test func badInputIsA4xxJSONErrorNamingTheField() async throws {
            let scratch = Scratch()
            let service = try await RunningServer.start(scratch)
            let url = "\(service.base)/v1/attachments"
            let cases: [(String, Int, String)] = [
                ("not json", 400, "JSON object"),
                (#"{"requests": 3}"#, 400, "requests must be an array"),
                (#"{"requests": [{"url": "http://a/b.jpg"}, {"identifier": "x"}]}"#, 400, "requests[1].url"),
                (#"{"requests": [{"url": "http://a/b.jpg", "clip": {"x": 0, "y": 0, "width": 2, "height": 1}}]}"#, 400, "requests[0].clip"),
                (#"{"requests": [{"url": "http://a/b.jpg", "role": "banner"}]}"#, 400, "requests[0].role"),
                (#"{"urls": ["http://a/b.jpg"], "deadlineMs": -5}"#, 400, "deadlineMs"),
                (#"{"urls": ["http://a/b.jpg"], "colour": "red"}"#, 400, "colour"),
                (#"{"urls": []}"#, 400, "empty"),
                (#"{"urls": ["http://a/b.jpg"], "files": "some"}"#, 400, #"files must be "kept" or "none""#),
                (#"{"urls": ["http://a/b.jpg"], "files": false}"#, 400, #"files must be "kept" or "none""#),
                ("{\"urls\": [" + (0..<101).map { "\"http://a/\($0).jpg\"" }.joined(separator: ",") + "]}", 400, "at most 100"),
            ]
            for (body, status, words) in cases {
                let answer = try await Exchange.post(url, json: body)
                #expect(answer.status == status, "\(body.prefix(60)): \(answer.status) \(answer.text)")
                #expect(answer.errorCode == "invalidRequest")
                #expect(((answer.json["error"] as? [String: Any])?["message"] as? String)?.contains(words) == true, "\(answer.text)")
            }
            let huge = try await Exchange.post(url, json: "{\"urls\": [\"" + String(repeating: "a", count: 1 << 20) + "\"]}")
            #expect(huge.status == 413 && huge.errorCode == "bodyTooLarge", "\(huge.status) \(huge.text.prefix(300))")
            let badHeader = try await Exchange.post(url, json: #"{"urls": ["http://a/b.jpg"]}"#, headers: ["X-Deadline-Ms": "soon"])
            #expect(badHeader.status == 400)
            // The rule is decimal digits: an exponent is refused, and the message says what is taken.
            let exponent = try await Exchange.post(url, json: #"{"urls": ["http://a/b.jpg"]}"#, headers: ["X-Deadline-Ms": "1e3"])
            #expect(exponent.status == 400 && exponent.text.contains("decimal digits") && exponent.text.contains("'1e3'"), "\(exponent.text)")
            let badFiles = try await Exchange.post("\(service.base)/v1/payloads?files=all", json: #"{"aps": {}}"#)
            #expect(badFiles.status == 400 && badFiles.errorCode == "invalidRequest" && badFiles.text.contains("the files parameter"))
            let notPayload = try await Exchange.post("\(service.base)/v1/payloads", json: "[1]")
            #expect(notPayload.status == 400 && notPayload.errorCode == "invalidRequest")
            // A payload's numbers come back with their values, in the shortest form that reads back
            // the same, not their spelling (docs/service.md): 1.0 as 1, 1e2 as 100, and an integer
            // past 2^53 with every digit.
            let numbers = try await Exchange.post("\(service.base)/v1/payloads?files=none&stripFailed=true",
                                                  json: #"{"aps": {"badge": 1.0}, "n": 1e2, "big": 12345678901234567890, "f": 1.5e300, "x": 0.1}"#)
            #expect(numbers.status == 200, "\(numbers.text)")
            for written in [#""badge":1}"#, #""n":100"#, #""big":12345678901234567890"#, #""f":1.5e+300"#, #""x":0.1"#] {
                #expect(numbers.text.contains(written), "\(written) in \(numbers.text)")
            }
            // Still serving after all of it.
            #expect(try await Exchange.send("GET", "\(service.base)/healthz").status == 200)
            await service.stop()
            #expect(scratch.tree() == [])
        }

        @Test func v1RoutesNeedABearerTokenWhenTokensAreSet() async throws {
            let scratch = Scratch()
            let service = try await RunningServer.start(scratch) { $0.tokens = ["first-token", "second-token"] }
            let url = "\(service.base)/v1/attachments"
            let body = #"{"urls": ["http://127.0.0.1:1/a.jpg"]}"#
            // A token followed by 256 (or 512) more bytes: lengths that differ by a multiple of 256.
            let padded = ["first-token" + String(repeating: "x", count: 256), "second-token" + String(repeating: "\u{0}", count: 512)]
            for headers in [[:], ["Authorization": "Bearer wrong"], ["Authorization": "Bearer first-toke"], ["Authorization": "Basic first-token"],
                            ["Authorization": "Bearer \(padded[0])"]] {
                let answer = try await Exchange.post(url, json: body, headers: headers)
                #expect(answer.status == 401 && answer.errorCode == "unauthorized", "\(headers)")
            }
            for token in ["first-token", "second-token"] {
                #expect(try await Exchange.post(url, json: body, headers: ["Authorization": "Bearer \(token)"]).status == 200)
            }
            for open in ["/healthz", "/readyz", "/metrics"] {
                #expect(try await Exchange.send("GET", service.base + open).status == 200, "\(open) stays open")
            }
            #expect(BearerTokens.matchesAny(Array("abc".utf8), [Array("abc".utf8)]))
            #expect(!BearerTokens.matchesAny(Array("abcd".utf8), [Array("abc".utf8)]))
            #expect(!BearerTokens.matchesAny([], [Array("abc".utf8)]))
            for given in padded {
                #expect(!BearerTokens.matchesAny(Array(given.utf8), [Array("first-token".utf8), Array("second-token".utf8)]),
                        "\(given.utf8.count) bytes")
            }
            await service.stop()
        }

        @Test func beyondMaxBatchesItIs503WithRetryAfterAtOnce() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let service = try await RunningServer.start(scratch) { $0.maxBatches = 1 }
            let slow = Task { try await Exchange.post("\(service.base)/v1/attachments", json: #"{"urls": ["\#(origin.url("photo.jpg", "delay=1500"))"]}"#) }
            try await waitUntil("the slow batch to reach the origin") { origin.requests("photo.jpg") > 0 }
            let started = ContinuousClock.now
            let refused = try await Exchange.post("\(service.base)/v1/attachments", json: #"{"urls": ["\#(origin.url("rotated.jpg"))"]}"#)
            #expect(ContinuousClock.now - started < .milliseconds(500), "at once, not after the batch in flight")
            #expect(refused.status == 503 && refused.errorCode == "overloaded")
            #expect(refused.headers["retry-after"] == "1")
            #expect(try await slow.value.status == 200)
            #expect(try await Exchange.post("\(service.base)/v1/attachments", json: #"{"urls": ["\#(origin.url("rotated.jpg"))"]}"#).status == 200)
            await service.stop()
        }

        @Test func ndjsonStreamsEachDescriptorAsItFinishesThenASummary() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let service = try await RunningServer.start(scratch)
            let answer = try await Exchange.post("\(service.base)/v1/attachments", json: """
                {"requests": [{"url": "\(origin.url("photo.jpg", "delay=800"))", "identifier": "slow"},
                              {"url": "\(origin.url("rotated.jpg"))", "identifier": "fast"},
                              {"url": "\(origin.url("photo.jpg", "status=404"))", "identifier": "missing"}]}
                """, headers: ["Accept": "application/x-ndjson"])
            #expect(answer.status == 200 && answer.headers["content-type"] == "application/x-ndjson")
            let lines = answer.text.split(separator: "\n").map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
            #expect(lines.count == 4)
            #expect(lines.last?["done"] as? Bool == true && lines.last?["attachments"] as? Int == 3)
            #expect((lines.last?["byStatus"] as? [String: Int]) == ["ready": 2, "failed": 1])
            #expect(lines.prefix(3).last?["identifier"] as? String == "slow", "in finishing order: the slow one last")
            #expect(Set(lines.prefix(3).compactMap { $0["identifier"] as? String }) == ["slow", "fast", "missing"])
            await service.stop()
        }

        /// `"files": "none"` (and `?files=none`): no directory is made for the call, hit or miss, and
        /// the descriptors name no local file; the verdict and the published URLs are all there.
        /// The default is unchanged.
        @Test func aCallThatAsksForNoFilesMakesNoDirectoryAndNamesNoLocalFile() async throws {
            let scratch = Scratch(), publish = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let service = try await RunningServer.start(scratch) {
                $0.pipeline.publish = Publishing(directory: publish.path, baseURL: "https://media.example.test/p")
            }
            let rootName = try #require(try FileManager.default.contentsOfDirectory(atPath: scratch.path)
                .first { $0.hasPrefix("attach-fetch-serve-") })
            let root = "\(scratch.path)/\(rootName)"
            func batchDirectories() -> [String] { (FileManager.default.subpaths(atPath: root) ?? []).sorted() }
            let photo = origin.url("photo.jpg")
            var statuses: [String] = []
            for _ in 0..<2 {
                let answer = try await Exchange.post("\(service.base)/v1/attachments", json: #"{"urls": ["\#(photo)"], "files": "none"}"#)
                #expect(answer.status == 200 && answer.json["directory"] == nil && !answer.text.contains(scratch.path), "\(answer.text)")
                let attachment = try #require((answer.json["attachments"] as? [[String: Any]])?.first)
                let thumbnail = try #require(attachment["thumbnail"] as? [String: Any])
                #expect(attachment["status"] as? String == "ready" && attachment["file"] == nil && thumbnail["file"] == nil)
                #expect(attachment["sha256"] is String && (attachment["width"] as? Int ?? 0) > 0 && thumbnail["width"] is Int)
                let published = try #require(attachment["publishedUrl"] as? String)
                #expect(FileManager.default.fileExists(atPath: "\(publish.path)/\((published as NSString).lastPathComponent)"))
                #expect((thumbnail["publishedUrl"] as? String)?.hasPrefix("https://media.example.test/p/") == true)
                statuses.append(attachment["cache"] as? String ?? "")
            }
            #expect(statuses == ["miss", "hit"])
            let streamed = try await Exchange.post("\(service.base)/v1/attachments", json: #"{"urls": ["\#(photo)"], "files": "none"}"#,
                                                   headers: ["Accept": "application/x-ndjson"])
            let lines = streamed.text.split(separator: "\n").map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
            #expect(lines.count == 2 && lines[0]["file"] == nil && lines[0]["status"] as? String == "ready")
            #expect(lines.last?["done"] as? Bool == true && lines.last?["directory"] == nil)
            let payload = try await Exchange.post("\(service.base)/v1/payloads?files=none&rewrite=true",
                                                  json: #"{"aps": {"mutable-content": 1}, "image_url": "\#(photo)"}"#)
            #expect(payload.status == 200 && !payload.text.contains(scratch.path), "\(payload.text)")
            #expect((payload.json["attachments"] as? [[String: Any]])?.first?["publishedUrl"] is String)
            #expect(batchDirectories() == [], "no directory was made: \(batchDirectories())")

            // The default: the call's own directory and links, as always.
            let kept = try await Exchange.post("\(service.base)/v1/attachments", json: #"{"urls": ["\#(photo)"], "files": "kept"}"#)
            let keptFile = try #require((kept.json["attachments"] as? [[String: Any]])?.first?["file"] as? String)
            #expect(keptFile.hasPrefix(root) && FileManager.default.fileExists(atPath: keptFile) && kept.json["directory"] is String)
            #expect(batchDirectories().count == 4, "a bucket, its batch, the file and the thumbnail: \(batchDirectories())")
            await service.stop()
            #expect(scratch.tree() == [])
        }

        /// `/readyz` and the metrics say how the decoders are confined: what every worker is
        /// checked for before its first job, the kernel's Landlock ABI here; and in-process
        /// decoders say they are not confined.
        @Test func readinessAndMetricsShowHowTheDecodersAreConfined() async throws {
            let kernel = Int(max(0, kernelLandlockABI))
            for isolation in [AttachFetchConfiguration.DecoderIsolation.processes, .none] {
                let service = try await RunningServer.start(Scratch()) { $0.pipeline.isolation = isolation }
                let ready = try await Exchange.send("GET", "\(service.base)/readyz")
                let decoders = try #require(ready.json["decoders"] as? [String: Any], "\(ready.text)")
                let confined = isolation == .processes
                #expect(ready.status == 200 && ready.json["status"] as? String == "ready")
                #expect(decoders["isolation"] as? String == (confined ? "processes" : "none"), "\(ready.text)")
                #expect(decoders["systemCallFilter"] as? Bool == confined, "\(ready.text)")
                #expect(decoders["landlockABI"] as? Int == (confined ? kernel : 0), "\(ready.text)")
                let metrics = try await Exchange.send("GET", "\(service.base)/metrics").text
                #expect(metricValue(metrics, "attach_fetch_decoder_landlock_abi") == Double(confined ? kernel : 0), "\(metrics)")
                #expect(metricValue(metrics, "attach_fetch_decoder_system_call_filter") == (confined ? 1 : 0), "\(metrics)")
                await service.stop()
            }
        }
    }
}
