import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// `attach-fetch serve` exporting OTLP over HTTP to a real receiver on loopback
/// (Tests/PythonSupport/otlp_receiver.py, which decodes OTLP's JSON), as a child process: the
/// tracer is process-wide, so the test process itself never bootstraps one.
@Suite(.serialized) struct TraceExportTests {
    /// The receiver as a child process; `--hang` for a collector that never answers.
    final class Receiver {
        let process = Process()
        let port: Int
        var endpoint: String { "http://127.0.0.1:\(port)" }

        init(hang: Bool = false) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path + "/PythonSupport/otlp_receiver.py"] + (hang ? ["--hang"] : [])
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            port = Int(line.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        }

        // SIGKILL: a child of the test process may inherit SIGTERM blocked.
        deinit {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        /// Everything received: the spans (each with its resource) and the request count.
        func received() async throws -> (spans: [[String: Any]], requests: Int) {
            let answer = try await Exchange.send("GET", "\(endpoint)/spans")
            return ((answer.json["spans"] as? [[String: Any]]) ?? [], answer.json["requests"] as? Int ?? 0)
        }

        /// Waits (at most 10 s) until `enough` holds for the spans received.
        func spans(until enough: ([[String: Any]]) -> Bool) async throws -> [[String: Any]] {
            for _ in 0..<200 {
                let spans = try await received().spans
                if enough(spans) { return spans }
                try await Task.sleep(for: .milliseconds(50)) // polling the receiver: the event is another process's
            }
            return try await received().spans
        }
    }

    static func attribute(_ span: [String: Any], _ key: String) -> String? {
        guard let pairs = span["attributes"] as? [[String: Any]], let pair = pairs.first(where: { $0["key"] as? String == key }),
              let value = pair["value"] as? [String: Any] else { return nil }
        return (value["stringValue"] ?? value["intValue"] ?? value["boolValue"]).map { "\($0)" }
    }

    static let environment = ["OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_SERVICE_NAME": "af-test",
                              "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test"]

    @Test func aCallersTraceparentMakesTheServiceSpansItsChildrenWithTheStagesBelowAndNoSecrets() async throws {
        let receiver = try Receiver()
        let scratch = Scratch()
        let tokenFile = scratch.path + "/token"
        let token = "bearer-secret-\(UInt64.random(in: 1...UInt64.max))"
        try makeFile(tokenFile, Data(token.utf8), permissions: 0o600)
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        let (process, port) = try launchServe(["--allow-private-network", "--token-file", tokenFile],
                                              environment: Self.environment.merging(["OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                                                                                     "TMPDIR": scratch.path]) { $1 })
        defer { process.terminate() }
        let traceID = "4bf92f3577b34da6a3ce929d0e0e4736", parentID = "00f067aa0ba902b7"
        let secretQuery = "sig-\(UInt64.random(in: 1...UInt64.max))"
        let url = origin.url("photo.jpg", "token=\(secretQuery)").replacingOccurrences(of: "http://", with: "http://user:pass-\(secretQuery)@")
        let answer = try await Exchange.post("http://127.0.0.1:\(port)/v1/attachments", json: #"{"urls": ["\#(url)"]}"#,
                                             headers: ["traceparent": "00-\(traceID)-\(parentID)-01", "tracestate": "vendor=value",
                                                       "Authorization": "Bearer \(token)"])
        #expect(answer.status == 200, "\(answer.text)")
        let header = try #require(answer.headers["traceparent"], "the answer carries the service span's traceparent")
        #expect(header.hasPrefix("00-\(traceID)-") && !header.contains(parentID), "\(header)")
        #expect(answer.headers["tracestate"] == "vendor=value")
        // The server span ends after its answer's body is written: it may come in a later export.
        let spans = try await receiver.spans { spans in
            spans.contains { $0["name"] as? String == "attach_fetch.thumbnail" } && spans.contains { $0["kind"] as? Int == 2 }
        }
        let ours = spans.filter { $0["traceId"] as? String == traceID }
        #expect(ours.count == spans.count && !ours.isEmpty, "every span is in the caller's trace: \(spans.count) spans")
        func named(_ name: String) -> [String: Any]? { ours.first { $0["name"] as? String == name } }
        let server = try #require(ours.first { $0["kind"] as? Int == 2 }, "a server span")
        #expect(server["parentSpanId"] as? String == parentID, "the service's span is the caller's child")
        #expect(header.split(separator: "-")[2] == (server["spanId"] as? String ?? "")[...])
        let batch = try #require(named("attach_fetch.batch")), attachment = try #require(named("attach_fetch.attachment"))
        let work = try #require(named("attach_fetch.work")), download = try #require(named("attach_fetch.download"))
        #expect(batch["parentSpanId"] as? String == server["spanId"] as? String)
        #expect(attachment["parentSpanId"] as? String == batch["spanId"] as? String)
        #expect(work["parentSpanId"] as? String == attachment["spanId"] as? String)
        for stage in ["attach_fetch.download", "attach_fetch.thumbnail"] {
            #expect(named(stage)?["parentSpanId"] as? String == work["spanId"] as? String, "\(stage) is a stage of the work")
        }
        #expect(Self.attribute(download, "server.address") == "127.0.0.1" && Self.attribute(download, "url.scheme") == "http")
        #expect(Self.attribute(download, "http.response.status_code") == "200", "\(download)")
        #expect(Self.attribute(attachment, "attach_fetch.status") == "ready" && Self.attribute(attachment, "attach_fetch.cache") == "miss")
        #expect((server["resource"] as? [String: Any])?["service.name"].map { "\($0)" }?.contains("af-test") == true)
        // Nothing secret anywhere: not the query, the user info, the token.
        let everything = String(decoding: try JSONSerialization.data(withJSONObject: spans), as: UTF8.self)
        for secret in [secretQuery, token, "pass-"] { #expect(!everything.contains(secret), "\(secret) was exported") }
        #expect(Self.attribute(download, "url.full") == origin.url("photo.jpg"), "\(Self.attribute(download, "url.full") ?? "-")")
    }

    @Test func aCoalescedSecondCallLinksToTheSpanThatDidTheWork() async throws {
        let receiver = try Receiver()
        let scratch = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        let (process, port) = try launchServe(["--allow-private-network"], environment: Self.environment.merging(
            ["OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "TMPDIR": scratch.path]) { $1 })
        defer { process.terminate() }
        let url = origin.url("photo.jpg", "delay=1500")
        let first = Task { try await Exchange.post("http://127.0.0.1:\(port)/v1/attachments", json: #"{"urls": ["\#(url)"]}"#) }
        while origin.requests("photo.jpg") == 0 { try await Task.sleep(for: .milliseconds(10)) } // until the origin has the request
        let second = try await Exchange.post("http://127.0.0.1:\(port)/v1/attachments", json: #"{"urls": ["\#(url)"]}"#)
        _ = try await first.value
        #expect(origin.requests("photo.jpg") == 1)
        #expect(((second.json["attachments"] as? [[String: Any]])?.first?["cache"] as? String) == "coalesced", "\(second.text)")
        let spans = try await receiver.spans { $0.filter { $0["name"] as? String == "attach_fetch.attachment" }.count >= 2 }
        let works = spans.filter { $0["name"] as? String == "attach_fetch.work" }
        #expect(works.count == 1, "one piece of work")
        let linked = spans.filter { $0["name"] as? String == "attach_fetch.attachment" && Self.attribute($0, "attach_fetch.cache") == "coalesced" }
        let link = try #require((linked.first?["links"] as? [[String: Any]])?.first, "the coalesced call's span links to the work")
        #expect(link["spanId"] as? String == works.first?["spanId"] as? String && link["traceId"] as? String == works.first?["traceId"] as? String)
    }

    @Test func aCollectorThatNeverAnswersCostsRequestsNothingAndShowsInTheDropCounter() async throws {
        let receiver = try Receiver(hang: true)
        let scratch = Scratch()
        let (process, port) = try launchServe(["--allow-private-network"], environment: Self.environment.merging(
            ["OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_MAX_QUEUE_SIZE": "16", "OTEL_BSP_EXPORT_TIMEOUT": "60000",
             "TMPDIR": scratch.path]) { $1 })
        defer { process.terminate() }
        try await withMediaServer { media in
            for _ in 0..<20 {
                let started = ContinuousClock.now
                let answer = try await Exchange.post("http://127.0.0.1:\(port)/v1/attachments", json: #"{"urls": ["\#(media.baseURL)/media/photo.jpg"]}"#)
                #expect(answer.status == 200)
                // Waiting on the collector would take its 60 s export timeout; a loaded machine
                // takes well under a quarter of that for one photo.
                #expect(ContinuousClock.now - started < .seconds(15), "\(ContinuousClock.now - started)")
            }
        }
        var dropped = 0.0
        let giveUp = ContinuousClock.now + .seconds(30)
        while dropped == 0 && ContinuousClock.now < giveUp {
            let metrics = try await Exchange.send("GET", "http://127.0.0.1:\(port)/metrics").text
            dropped = metricValue(metrics, #"attach_fetch_trace_spans{state="dropped"}"#) ?? 0
            if dropped == 0 { try await Task.sleep(for: .milliseconds(50)) } // the queue filling is another process's event
        }
        #expect(dropped > 0, "spans the collector never took are counted")
    }

    @Test func theCLIExportsNothingEvenWithTheVariablesSet() async throws {
        let receiver = try Receiver()
        try await withMediaServer { media in
            let run = try await CLITests.run(["--allow-private-network", "--format", "json", "\(media.baseURL)/media/photo.jpg"],
                                       environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "1"])
            #expect(run.status == 0, "\(run.stderr)")
        }
        #expect(try await receiver.received().requests == 0)
    }

    @Test func aVariableThatCannotBeUsedStopsServeNamingIt() async throws {
        for (environment, named) in [(["OTEL_TRACES_SAMPLER": "bogus"], "OTEL_TRACES_SAMPLER"),
                                     (["OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"], "OTEL_TRACES_SAMPLER_ARG"),
                                     (["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"], "OTEL_EXPORTER_OTLP_PROTOCOL"),
                                     (["OTEL_BSP_MAX_QUEUE_SIZE": "0"], "OTEL_BSP_MAX_QUEUE_SIZE"),
                                     (["OTEL_EXPORTER_OTLP_HEADERS": "secret-without-equals"], "OTEL_EXPORTER_OTLP_HEADERS")] {
            let run = try await CLITests.run(["serve", "--port", "0"],
                                             environment: environment.merging(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"]) { $1 })
            #expect(run.status == 2 && run.stderr.contains(named), "\(environment): \(run.status) \(run.stderr)")
            #expect(!run.stderr.contains("secret-without-equals"), "a header's text is never printed")
        }
    }
}
