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

/// The service's published files, payloads, metrics, logs and connections.
extension ServiceTimerSuites.ServiceTests {
    @Test func payloadsAreLintedStrippedAndRewritten() async throws {
        let scratch = Scratch(), publish = Scratch()
        let service = try await RunningServer.start(scratch) {
            $0.pipeline.publish = Publishing(directory: publish.path, baseURL: "https://media.example.test/p")
        }
        try await withMediaServer { media in
            let payload = fcmMessage(shared: "\(media.baseURL)/media/photo.jpg", android: "\(media.baseURL)/media/animated.gif",
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
        try makeFile(secret, Data("secret".utf8))
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
        try makeFile("\(publish.path)/\(name)", content)
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
