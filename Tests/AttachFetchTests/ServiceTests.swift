import AttachFetch
@testable import AttachFetchService
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Testing

/// A real `AttachFetchServer` on 127.0.0.1:0, stopped (and its files removed) at the end.
final class RunningServer: Sendable {
    let server: AttachFetchServer
    let port: Int
    private let task: Task<Void, any Error>

    static func start(_ scratch: Scratch, logger: Logger = AttachmentPipeline.silentLogger,
                      _ adjust: (inout ServiceConfiguration) -> Void = { _ in }) async throws -> RunningServer {
        var pipeline = AttachFetchConfiguration()
        pipeline.allowPrivateNetwork = true // the media server is on loopback
        pipeline.temporaryDirectory = scratch.path
        var configuration = ServiceConfiguration(pipeline: pipeline)
        configuration.port = 0
        adjust(&configuration)
        let server = try AttachFetchServer(configuration: configuration, logger: logger)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task { try await server.run { continuation.yield($0) } }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        OpenAPIContract.servicePorts.withLock { _ = $0.insert(port) }
        return RunningServer(server: server, port: port, task: task)
    }

    private init(server: AttachFetchServer, port: Int, task: Task<Void, any Error>) {
        self.server = server
        self.port = port
        self.task = task
    }

    var base: String { "http://127.0.0.1:\(port)" }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

/// The value of the first Prometheus sample line starting with `prefix` (name and labels).
func metricValue(_ text: String, _ prefix: String) -> Double? {
    text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.split(separator: " ").last ?? "") }
}

/// One HTTP exchange through URLSession (libcurl underneath on Linux).
struct Exchange {
    var status: Int
    var headers: [String: String]
    var body: Data

    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }

    static func send(_ method: String, _ url: String, body: Data? = nil, headers: [String: String] = [:],
                     timeout: TimeInterval = 30) async throws -> Exchange {
        var request = URLRequest(url: URL(string: url)!, timeoutInterval: timeout)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        return try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: request) { data, response, error in
                if let error { return continuation.resume(throwing: error) }
                let http = response as! HTTPURLResponse
                var fields: [String: String] = [:]
                for (name, value) in http.allHeaderFields { fields["\(name)".lowercased()] = "\(value)" }
                // Every answer of a service the tests started is checked against the OpenAPI document.
                OpenAPIContract.check(method: method, url: url, status: http.statusCode, contentType: fields["content-type"],
                                      body: data ?? Data())
                continuation.resume(returning: Exchange(status: http.statusCode, headers: fields, body: data ?? Data()))
            }.resume()
        }
    }

    static func post(_ url: String, json: String, headers: [String: String] = [:]) async throws -> Exchange {
        try await send("POST", url, body: Data(json.utf8), headers: ["Content-Type": "application/json"].merging(headers) { $1 })
    }
}

extension TimerBoundSuites {
    // Serialized: tests time batch-file retention, drains and cancellations against their bounds.
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

        @Test func payloadsAreLintedStrippedAndRewritten() async throws {
            let scratch = Scratch(), publish = Scratch()
            let service = try await RunningServer.start(scratch) {
                $0.pipeline.publish = Publishing(directory: publish.path, baseURL: "https://media.example.test/p")
            }
            try await withMediaServer { media in
                let payload = PayloadRewriteTests.fcmMessage(shared: "\(media.baseURL)/media/photo.jpg", android: "\(media.baseURL)/media/animated.gif",
                                                             apns: "\(media.baseURL)/media/animated.gif", data: "\(media.baseURL)/status/404")
                let plain = try await Exchange.post("\(service.base)/v1/payloads", json: payload)
                #expect(plain.status == 200)
                #expect((plain.json["attachments"] as? [Any])?.count == 4)
                #expect(plain.json["lint"] is [Any] && plain.json["payload"] == nil)

                let stripped = try await Exchange.post("\(service.base)/v1/payloads?stripFailed=true", json: payload)
                let strippedMessage = try #require((stripped.json["payload"] as? [String: Any])?["message"] as? [String: Any])
                #expect(strippedMessage["data"] as? [String: Any] == nil || (strippedMessage["data"] as? [String: Any])?["image"] == nil)

                let rewritten = try await Exchange.post("\(service.base)/v1/payloads?rewrite=true", json: payload)
                let message = try #require((rewritten.json["payload"] as? [String: Any])?["message"] as? [String: Any])
                let android = try #require(((message["android"] as? [String: Any])?["notification"] as? [String: Any])?["image"] as? String)
                let apns = try #require(((message["apns"] as? [String: Any])?["fcm_options"] as? [String: Any])?["image"] as? String)
                #expect(android != apns, "Android gets the GIF's first frame, iOS the animation")
                #expect(apns.hasSuffix(".gif") && android.hasPrefix("https://media.example.test/p/"))
                #expect((message["apns"] as? [String: Any])?["payload"] != nil, "the rest of the payload is kept")

                // The payload comes back as the client wrote it: a 19-digit id exact (not through a
                // Double), booleans and zeros as they were, the document one compact JSON object.
                let numbers = #"{"aps": {"mutable-content": 1}, "image_url": "\#(media.baseURL)/media/photo.jpg", "campaign": 1234567890123456789, "# +
                    #""big": 18446744073709551615, "ratio": 0.1, "custom": {"flag": true, "n": 0, "off": false}}"#
                for query in ["stripFailed=true", "rewrite=true"] {
                    let answer = try await Exchange.post("\(service.base)/v1/payloads?\(query)", json: numbers)
                    #expect(answer.status == 200 && answer.json["lint"] is [Any] && answer.json["payload"] is [String: Any], "\(answer.text)")
                    for literal in [#""campaign":1234567890123456789"#, #""big":18446744073709551615"#, #""ratio":0.1"#,
                                    #""custom":{"flag":true,"n":0,"off":false}"#, #""mutable-content":1"#] {
                        #expect(answer.text.contains(literal), "\(query): \(literal) in \(answer.text)")
                    }
                    #expect(answer.text.split(separator: "\n").count == 1)
                }

                // The published files are served by the service itself.
                let name = (android as NSString).lastPathComponent
                let served = try await Exchange.send("GET", "\(service.base)/media/\(name)")
                #expect(served.status == 200)
                #expect(served.headers["cache-control"] == "public, max-age=31536000, immutable")
                #expect(served.headers["etag"] == "\"\(name.prefix(64))\"")
                #expect(["image/jpeg", "image/png"].contains(served.headers["content-type"] ?? ""))
                #expect(served.body == FileManager.default.contents(atPath: "\(publish.path)/\(name)"))
                let part = try await Exchange.send("GET", "\(service.base)/media/\(name)", headers: ["Range": "bytes=0-9"])
                #expect(part.status == 206 && part.body.count == 10 && part.headers["content-range"]?.hasPrefix("bytes 0-9/") == true)
                let head = try await Exchange.send("HEAD", "\(service.base)/media/\(name)")
                #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] == String(served.body.count))
                let again = try await Exchange.send("GET", "\(service.base)/media/\(name)", headers: ["If-None-Match": "\"\(name.prefix(64))\""])
                #expect(again.status == 304)
                #expect(try await Exchange.send("GET", "\(service.base)/media/\(name)", headers: ["Range": "bytes=999999999-"]).status == 416)
                let listed = try await Exchange.send("GET", "\(service.base)/media/\(name)",
                                                     headers: ["If-None-Match": "\"other\", W/\"\(name.prefix(64))\""])
                #expect(listed.status == 304, "one tag of a list, compared weakly")
                #expect(try await Exchange.send("GET", "\(service.base)/media/\(name)", headers: ["If-None-Match": "\"other\""]).status == 200)
                for unsupported in ["bytes=0-1,4-5", "items=0-9", "bytes=5-2", "bytes=x-"] {
                    let whole = try await Exchange.send("GET", "\(service.base)/media/\(name)", headers: ["Range": unsupported])
                    #expect(whole.status == 200 && whole.body == served.body, "\(unsupported): ignored, the whole file")
                }
            }
            await service.stop()
        }

        @Test func notReadyWhileThePublishDirectoryCannotBeWritten() async throws {
            let scratch = Scratch(), publish = Scratch()
            let service = try await RunningServer.start(scratch) {
                $0.pipeline.publish = Publishing(directory: publish.path, baseURL: "https://media.example.test/p")
            }
            #expect(try await Exchange.send("GET", "\(service.base)/readyz").status == 200)
            // Gone (a file mode would not do: the tests may run as root, whom modes do not stop).
            try FileManager.default.removeItem(atPath: publish.path)
            let gone = try await Exchange.send("GET", "\(service.base)/readyz")
            #expect(gone.status == 503 && gone.errorCode == "publishDirectoryNotWritable", "\(gone.status) \(gone.text)")
            #expect(try await Exchange.send("HEAD", "\(service.base)/readyz").status == 503)
            #expect(try await Exchange.send("GET", "\(service.base)/healthz").status == 200, "alive, only not ready")
            try FileManager.default.createDirectory(atPath: publish.path, withIntermediateDirectories: false)
            #expect(try await Exchange.send("GET", "\(service.base)/readyz").status == 200, "ready again once it is back")
            await service.stop()
        }

        @Test func nothingOutsideThePublishDirectoryIsReachable() async throws {
            let scratch = Scratch(), publish = Scratch()
            let secret = "\(scratch.path)/secret.jpg"
            FileManager.default.createFile(atPath: secret, contents: Data("secret".utf8))
            let hex = String(repeating: "c", count: 64)
            try FileManager.default.createSymbolicLink(atPath: "\(publish.path)/\(hex).jpg", withDestinationPath: secret)
            try FileManager.default.createDirectory(atPath: "\(publish.path)/\(String(repeating: "d", count: 64)).jpg", withIntermediateDirectories: false)
            let service = try await RunningServer.start(scratch) {
                $0.pipeline.publish = Publishing(directory: publish.path, baseURL: "https://media.example.test/p")
            }
            for path in ["/media/../secret.jpg", "/media/%2e%2e/secret.jpg", "/media/%2E%2E%2Fsecret.jpg", "/media/..%2fsecret.jpg",
                         "/media/\(hex).jpg", "/media/\(String(repeating: "d", count: 64)).jpg", "/media/", "/media/secret.jpg",
                         "/media/\(hex.uppercased()).jpg", "/media//etc/passwd"] {
                let answer = try await Exchange.send("GET", service.base + path)
                #expect(answer.status == 404, "\(path): \(answer.status)")
                #expect(!answer.text.contains("secret") || answer.errorCode != nil, "\(path)")
            }
            await service.stop()
        }

        @Test func largePublishedFilesAreServedWholeAndInRangesAcrossChunks() async throws {
            let scratch = Scratch(), publish = Scratch()
            // 3 MB of varied bytes: a dozen of the server's read chunks, and not a multiple of one.
            var bytes = [UInt8](repeating: 0, count: 3_000_017)
            var state: UInt32 = 2_463_534_242
            for index in bytes.indices {
                state ^= state << 13; state ^= state >> 17; state ^= state << 5
                bytes[index] = UInt8(truncatingIfNeeded: state)
            }
            let content = Data(bytes)
            let name = "\(String(repeating: "e", count: 64)).mp4"
            FileManager.default.createFile(atPath: "\(publish.path)/\(name)", contents: content)
            let service = try await RunningServer.start(scratch) {
                $0.pipeline.publish = Publishing(directory: publish.path, baseURL: "https://media.example.test/p")
            }
            let whole = try await Exchange.send("GET", "\(service.base)/media/\(name)")
            #expect(whole.status == 200 && whole.headers["content-length"] == String(content.count))
            #expect(whole.body == content, "the whole file, byte for byte")
            #expect(MediaFiles.byteRange("bytes=3-100", size: 10) == .bytes(3..<10))
            #expect(MediaFiles.byteRange("bytes=-4", size: 10) == .bytes(6..<10))
            #expect(MediaFiles.byteRange("bytes=-0", size: 10) == .unsatisfiable)
            #expect(MediaFiles.byteRange("bytes=10-", size: 10) == .unsatisfiable)
            #expect(MediaFiles.byteRange("bytes=0-", size: 0) == .unsatisfiable)
            #expect(MediaFiles.byteRange("bytes=0-1, 3-4", size: 10) == .ignored)
            let chunk = MediaFiles.chunkBytes
            for (header, expected) in [("bytes=\(chunk - 5)-\(3 * chunk + 7)", (chunk - 5)..<(3 * chunk + 8)),
                                       ("bytes=\(content.count - 100_000)-", (content.count - 100_000)..<content.count),
                                       ("bytes=-1", (content.count - 1)..<content.count)] {
                let part = try await Exchange.send("GET", "\(service.base)/media/\(name)", headers: ["Range": header])
                #expect(part.status == 206 && part.body == content.subdata(in: expected), "\(header)")
                #expect(part.headers["content-range"] == "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/\(content.count)")
            }
            await service.stop()
        }

        @Test func metricsAreThePrometheusTextAndMoveAsRequestsArrive() async throws {
            let scratch = Scratch()
            let service = try await RunningServer.start(scratch)
            func value(_ text: String, _ prefix: String) -> Double { metricValue(text, prefix) ?? 0 }
            try await withMediaServer { media in
                let before = try await Exchange.send("GET", "\(service.base)/metrics").text
                for _ in 0..<3 {
                    _ = try await Exchange.post("\(service.base)/v1/attachments", json: #"{"urls": ["\#(media.baseURL)/media/photo.jpg"]}"#)
                }
                _ = try await Exchange.post("\(service.base)/v1/attachments", json: "nope")
                let after = try await Exchange.send("GET", "\(service.base)/metrics")
                #expect(after.headers["content-type"]?.hasPrefix("text/plain") == true)
                let text = after.text
                let okRequests = #"attach_fetch_requests_total{route="/v1/attachments",status="200"}"#
                #expect(value(text, okRequests) - value(before, okRequests) == 3, "\(text)")
                #expect(value(text, #"attach_fetch_requests_total{route="/v1/attachments",status="400"}"#) == 1)
                #expect(value(text, #"attach_fetch_attachments_total{status="ready",reason="none"}"#) == 3)
                #expect(value(text, #"attach_fetch_cache_results_total{result="miss"}"#) == 1)
                #expect(value(text, #"attach_fetch_cache_results_total{result="hit"}"#) == 2, "the service caches by default")
                #expect(value(text, "attach_fetch_downloaded_bytes_total") == 10150)
                #expect(text.contains(#"attach_fetch_stage_duration_seconds_bucket{stage="download""#))
                #expect(text.contains("attach_fetch_request_duration_seconds_count"))
                #expect(value(text, "attach_fetch_batches_in_flight") == 0)
                for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                    #expect(line.hasPrefix("attach_fetch_") && Double(line.split(separator: " ").last ?? "") != nil, "\(line)")
                }
            }
            await service.stop()
        }

        @Test func inFlightGaugesShowRunningAndQueuedTransfersAndBatches() async throws {
            let scratch = Scratch()
            let service = try await RunningServer.start(scratch) { $0.pipeline.maxConcurrentTransfers = 1 }
            let value = metricValue
            let running = #"attach_fetch_transfers_in_flight{state="running"}"#
            let queued = #"attach_fetch_transfers_in_flight{state="queued"}"#
            try await withMediaServer { media in
                // Three stalled downloads, one slot: one runs and two wait until the deadline.
                let urls = (0..<3).map { #""\#(media.baseURL)/stall/photo.jpg?n=\#($0)""# }.joined(separator: ",")
                let batch = Task { try await Exchange.post("\(service.base)/v1/attachments", json: #"{"urls": [\#(urls)], "deadlineMs": 2000}"#) }
                var seen: (Double?, Double?, Double?) = (nil, nil, nil)
                for _ in 0..<100 {
                    let text = try await Exchange.send("GET", "\(service.base)/metrics").text
                    seen = (value(text, running), value(text, queued), value(text, "attach_fetch_batches_in_flight"))
                    if seen.0 == 1 && seen.1 == 2 { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(seen.0 == 1 && seen.1 == 2 && seen.2 == 1, "running, queued, batches: \(seen)")
                #expect(try await batch.value.status == 200)
                let after = try await Exchange.send("GET", "\(service.base)/metrics").text
                #expect(value(after, running) == 0 && value(after, queued) == 0 && value(after, "attach_fetch_batches_in_flight") == 0)
            }
            await service.stop()
        }

        @Test func batchFilesAreKeptForTheRetentionThenRemoved() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            // A half-second longest deadline: the files are kept max(1-s retention, 0.5 s + 1 s), 1.5 s.
            let service = try await RunningServer.start(scratch) {
                $0.retention = .seconds(1)
                $0.maxDeadline = .milliseconds(500)
            }
            // The batch's directory is made after the call is sent: the retention counts from then.
            let written = ContinuousClock.now
            let answer = try await Exchange.post("\(service.base)/v1/attachments", json: #"{"urls": ["\#(origin.url("photo.jpg"))"]}"#)
            let attachment = try #require((answer.json["attachments"] as? [[String: Any]])?.first)
            let file = try #require(attachment["file"] as? String)
            let thumbnail = try #require((attachment["thumbnail"] as? [String: Any])?["file"] as? String)
            // Kept for the retention (max(1 s, 0.5 s + 1 s) = 1.5 s): still there after half a second.
            // The subject: half a second in which the files must not be removed.
            try await Task.sleep(until: written + .milliseconds(500))
            #expect(FileManager.default.fileExists(atPath: file) && FileManager.default.fileExists(atPath: thumbnail))
            // Removed after it (at most two sweep intervals of 375 ms later; 4 s allowed for a busy machine).
            try await waitUntil("the batch's file to be removed") { !FileManager.default.fileExists(atPath: file) }
            let removedAfter = ContinuousClock.now - written
            #expect(!FileManager.default.fileExists(atPath: file) && !FileManager.default.fileExists(atPath: thumbnail))
            #expect(removedAfter >= .milliseconds(1500) && removedAfter < .seconds(4), "removed \(removedAfter) after the batch")
            // Nothing of that batch is left in the service's root: not its directory, not its bucket.
            // The sweep removes the bucket's directories once their files are gone.
            let root = ((file as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
            try await waitUntil("the bucket \(root) to be gone", timeout: .seconds(5)) { !FileManager.default.fileExists(atPath: root) }
            await service.stop()
        }

        @Test func eachRequestLogsOneStructuredLine() async throws {
            let scratch = Scratch()
            let records = CapturedLog()
            let service = try await RunningServer.start(scratch, logger: Logger(label: "service") { _ in records })
            let started = ContinuousClock.now
            try await withMediaServer { media in
                _ = try await Exchange.post("\(service.base)/v1/attachments",
                                            json: #"{"urls": ["\#(media.baseURL)/media/photo.jpg", "\#(media.baseURL)/status/404", "\#(media.baseURL)/media/tone.mp3"]}"#)
                _ = try await Exchange.send("GET", "\(service.base)/healthz")
                _ = try await Exchange.send("GET", "\(service.base)/media/%2e%2e/secret.jpg")
                _ = try await Exchange.send("DELETE", "\(service.base)/v1/payloads")
            }
            // Every request was answered within this, so no line can say it took longer.
            let took = (ContinuousClock.now - started) / .milliseconds(1)
            await service.stop()
            let lines = records.entries.filter { $0.message == "request" }
            #expect(lines.count == 4, "one line per request: \(lines)")
            #expect(lines.allSatisfy { $0.level == .info })
            let fields = lines.map { line in ["method", "route", "status"].map { line.metadata[$0].map { "\($0)" } ?? "-" } }
            #expect(fields == [["POST", "/v1/attachments", "200"], ["GET", "/healthz", "200"], ["GET", "/media", "404"],
                               ["DELETE", "/v1/payloads", "405"]], "\(fields)")
            let milliseconds = lines.map { line in line.metadata["ms"].flatMap { Int("\($0)") } }
            #expect(milliseconds.allSatisfy { ms in ms.map { $0 >= 0 && Double($0) <= took } == true }, "\(milliseconds) within \(took) ms")
            guard case .dictionary(let counts)? = lines.first?.metadata["attachments"] else {
                Issue.record("no attachment counts: \(String(describing: lines.first))")
                return
            }
            #expect(counts.mapValues { "\($0)" } == ["ready": "2", "failed": "1"])
            #expect(lines.dropFirst().allSatisfy { $0.metadata["attachments"] == nil }, "counts only where a batch ran")
        }

        @Test func aBatchLongerThanTheRetentionKeepsItsFiles() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            // Retention 1 s, deadline up to 4 s: a sweep every 250 ms would remove the batch's
            // directory while its 2-s download is still running, unless batches in flight are kept.
            let service = try await RunningServer.start(scratch) {
                $0.retention = .seconds(1)
                $0.maxDeadline = .seconds(4)
            }
            let answer = try await Exchange.post("\(service.base)/v1/attachments",
                                                 json: #"{"urls": ["\#(origin.url("photo.jpg", "delay=2000"))", "\#(origin.url("rotated.jpg"))"]}"#)
            let attachments = try #require(answer.json["attachments"] as? [[String: Any]], "\(answer.text)")
            #expect(attachments.map { $0["status"] as? String } == ["ready", "ready"], "\(answer.text)")
            for attachment in attachments {
                let file = try #require(attachment["file"] as? String)
                #expect(FileManager.default.fileExists(atPath: file), "\(file) is there when the answer arrives")
            }
            await service.stop()
        }

        @Test func connectionsStayOpenBetweenCalls() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let watchedBefore = ClientDisconnectWatch.watching
            let service = try await RunningServer.start(scratch)
            // One curl, three calls: %{num_connects} is 1 for a call that opened a connection and 0
            // for one that reused it. Watching for disconnects must not cost clients keep-alive.
            let body = #"{"urls": ["\#(origin.url("photo.jpg"))"]}"#
            let client = try await offPool {
                try runChild("/usr/bin/curl", ["-s", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", body,
                                               "-w", "%{http_code} %{num_connects}\n",
                                               "-o", "/dev/null", "\(service.base)/v1/attachments",
                                               "-o", "/dev/null", "\(service.base)/v1/attachments",
                                               "-o", "/dev/null", "\(service.base)/v1/payloads"])
            }
            #expect(client.output.split(separator: "\n") == ["200 1", "200 0", "200 0"], "\(client.output)")
            // curl has exited: its connection's disconnect watch has left the registry of watches
            // (an entry left behind would be kept forever). Fewer than before is an earlier test's
            // connection closing meanwhile.
            try await waitUntil("curl's disconnect watch to leave the registry") { ClientDisconnectWatch.watching <= watchedBefore }
            #expect(ClientDisconnectWatch.watching <= watchedBefore)
            await service.stop()
        }

        @Test(arguments: ["application/json", "application/x-ndjson"])
        func aClientThatDisconnectsCancelsItsBatchAndItsFilesGo(accept: String) async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let service = try await RunningServer.start(scratch)
            let body = #"{"urls": ["\#(origin.url("photo.jpg"))", "\#(origin.url("rotated.jpg", "delay=2000"))"]}"#
            // curl gives up after 0.8 s and closes the connection (for NDJSON, after the first line).
            let client = try await offPool {
                try runChild("/usr/bin/curl", ["-s", "--max-time", "0.8", "-X", "POST", "-H", "Content-Type: application/json",
                                               "-H", "Accept: \(accept)", "--data-binary", body, "\(service.base)/v1/attachments"])
            }
            #expect(client.status == 28, "curl's exit status for its own timeout")
            if accept == "application/x-ndjson" { #expect(client.output.split(separator: "\n").count == 1, "\(client.output)") }
            // The batch is cancelled: the slow transfer stops (the origin, which answers after 2 s
            // unless its client has gone, never sends that body), and the finished file is removed
            // from the batch's directory (the cache keeps its own copy in the hidden work store).
            // A transfer that went on would run until the origin's 2-s delay and receive the body.
            try await waitUntil("the batch's transfers ended") { service.server.pipeline.transfersInFlight == (0, 0) }
            try await waitUntil("the batch's files removed") {
                scratch.tree().filter { $0.hasPrefix("attach-fetch-serve-") && $0.hasSuffix(".jpg") }.isEmpty
            }
            #expect(origin.requests("rotated.jpg") == 1 && origin.bodies("rotated.jpg") == 0)
            await service.stop()
        }
    }
}

/// Starts `attach-fetch serve --port 0 ARGUMENTS` with `environment` added to this process's,
/// and returns it with the port it printed ("listening on http://127.0.0.1:PORT"). Its standard
/// error is read on from then on, so that a chatty service never blocks on a full pipe.
func launchServe(_ arguments: [String], environment: [String: String], log: ServeLog? = nil) throws -> (Process, Int) {
    struct NoPort: Error, CustomStringConvertible { let description: String }
    let process = Process()
    process.executableURL = CLITests.executable
    process.arguments = ["serve", "--port", "0"] + arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let errors = Pipe()
    process.standardError = errors
    try process.run()
    var seen = ""
    while !seen.contains("listening on") || !seen.hasSuffix("\n") {
        let chunk = errors.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        seen += String(decoding: chunk, as: UTF8.self)
    }
    guard let port = seen.split(separator: ":").last.flatMap({ Int($0.prefix { $0.isNumber }) }) else {
        throw NoPort(description: seen)
    }
    log?.append(Data(seen.utf8))
    errors.fileHandleForReading.readabilityHandler = { handle in
        let data = handle.availableData
        log?.append(data)
    }
    OpenAPIContract.servicePorts.withLock { _ = $0.insert(port) }
    return (process, port)
}

extension TimerBoundSuites {
    /// The service as a real child process: SIGTERM drains and exits 0, leaving nothing behind.
    // Serialized: the test times a SIGTERM drain of a batch in flight.
    @Suite(.serialized) struct ServiceProcessTests {
        @Test func sigtermLetsTheBatchInFlightFinishThenExitsZeroLeavingNothing() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            // A stall timeout past the origin's 4-s delay: the batch must be slow, not stalled.
            let (process, port) = try launchServe(["--allow-private-network", "--drain-delay", "2", "--stall-timeout", "8"],
                                                  environment: ["TMPDIR": scratch.path])
            let base = "http://127.0.0.1:\(port)"
            #expect(try await Exchange.send("GET", "\(base)/readyz").status == 200)
            let inFlight = Task { try await Exchange.post("\(base)/v1/attachments", json: #"{"urls": ["\#(origin.url("photo.jpg", "delay=4000"))"]}"#) }
            try await waitUntil("the batch to reach the origin") { origin.requests("photo.jpg") > 0 }
            kill(process.processIdentifier, SIGTERM)
            let signalled = ContinuousClock.now
            // Draining: /readyz says so at once, while the listener, for the 2-s drain delay, still
            // accepts new connections (a load balancer's check reaches it) ...
            var readiness = try await Exchange.send("GET", "\(base)/readyz")
            for _ in 0..<50 where readiness.status == 200 {
                try await Task.sleep(for: .milliseconds(20))
                readiness = try await Exchange.send("GET", "\(base)/readyz")
            }
            #expect(readiness.status == 503 && readiness.errorCode == "draining", "\(readiness.status) \(readiness.text)")
            #expect(try await Exchange.send("GET", "\(base)/healthz").status == 200, "alive while draining")
            #expect(ContinuousClock.now - signalled < .seconds(2), "checked within the drain delay")
            // ... then it stops accepting, with the batch still in flight.
            var refused = false
            while !refused, ContinuousClock.now - signalled < .seconds(10) {
                refused = (try? await Exchange.send("GET", "\(base)/healthz", timeout: 2)) == nil
                if !refused { try await Task.sleep(for: .milliseconds(100)) }
            }
            let refusedAfter = ContinuousClock.now - signalled
            #expect(refused && refusedAfter >= .milliseconds(1900), "new connections refused \(refusedAfter) after SIGTERM")
            #expect(origin.bodies("photo.jpg") == 0, "the batch is still in flight when the listener stops")
            let answer = try await inFlight.value
            #expect(answer.status == 200)
            #expect((answer.json["attachments"] as? [[String: Any]])?.first?["status"] as? String == "ready")
            try await offPool { process.waitUntilExit() }
            #expect(process.terminationStatus == 0)
            // Soon after the batch (about 4 s): no background task (the retention sweeper sleeps up
            // to a minute) or idle keep-alive connection holds the exit back.
            let exitedAfter = ContinuousClock.now - signalled
            #expect(exitedAfter < .seconds(15), "exited \(exitedAfter) after SIGTERM")
            #expect(scratch.tree() == [], "no working or batch files remain")
        }
    }
}
