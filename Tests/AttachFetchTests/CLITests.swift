import Foundation
import LoopbackHTTPServer
import Testing

/// The `attach-fetch` executable, run as a child process against the loopback server.
@Suite struct CLITests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The built executable, beside the test bundle.
    static var executable: URL { URL(fileURLWithPath: builtExecutable("attach-fetch")) }

    static func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) async throws -> Run {
        try await offPool { try runBlocking(arguments, stdin: stdin, environment: environment) }
    }

    static func runBlocking(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws -> Run {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                   stderr: String(decoding: errData, as: UTF8.self))
    }

    @Test func usageErrorsExitTwoWithAClearMessage() async throws {
        let cases: [([String], String)] = [
            ([], "give at least one URL"),
            (["--clip", "0,0,2,1", "http://127.0.0.1:1/a"], "--clip"),
            (["--clip", "a,b", "http://127.0.0.1:1/a"], "four numbers"),
            (["--deadline", "0", "http://127.0.0.1:1/a"], "--deadline"),
            (["--out", "/nonexistent/dir", "http://127.0.0.1:1/a"], "--out"),
            (["--format", "xml", "http://127.0.0.1:1/a"], "format"),
            (["--max-concurrency", "0", "http://127.0.0.1:1/a"], "--max-concurrency"),
            (["--max-concurrency", "-3", "http://127.0.0.1:1/a"], "--max-concurrency"),
            (["--max-concurrency", "100000", "http://127.0.0.1:1/a"], "--max-concurrency"),
            (["--max-host-connections", "0", "http://127.0.0.1:1/a"], "--max-host-connections"),
            (["--max-host-connections", "-1", "http://127.0.0.1:1/a"], "--max-host-connections"),
            (["--max-host-connections", "99999", "http://127.0.0.1:1/a"], "--max-host-connections"),
            (["--max-inflight-bytes", "0", "http://127.0.0.1:1/a"], "--max-inflight-bytes"),
            (["--max-inflight-bytes", "-5G", "http://127.0.0.1:1/a"], "--max-inflight-bytes"),
            (["--max-inflight-bytes", "1M", "http://127.0.0.1:1/a"], "--max-inflight-bytes"),
            (["--max-inflight-bytes", "9999999T", "http://127.0.0.1:1/a"], "--max-inflight-bytes"),
            (["--max-inflight-bytes", "lots", "http://127.0.0.1:1/a"], "--max-inflight-bytes"),
            (["serve", "--port", "0", "--max-host-connections", "0"], "--max-host-connections"),
            (["--breaker-failures", "0", "http://127.0.0.1:1/a"], "--breaker-failures"),
            (["--breaker-failures", "-2", "http://127.0.0.1:1/a"], "--breaker-failures"),
            (["--breaker-cooldown", "0", "http://127.0.0.1:1/a"], "--breaker-cooldown"),
            (["--breaker-cooldown", "nan", "http://127.0.0.1:1/a"], "--breaker-cooldown"),
            (["serve", "--port", "0", "--breaker-cooldown", "99999"], "--breaker-cooldown"),
            (["serve", "--port", "0", "--max-inflight-bytes", "12"], "--max-inflight-bytes"),
            (["--input", "/nonexistent/file"], "--input"),
            (["--allow-cidr", "10.0.0.0/33", "http://127.0.0.1:1/a"], "--allow-cidr"),
            (["--deny-cidr", "example.com", "http://127.0.0.1:1/a"], "--deny-cidr"),
            (["--thumbnail-time", "-1", "http://127.0.0.1:1/a"], "--thumbnail-time"),
            (["--url-key", "a..b", "--payload", "-"], "--url-key"),
            (["serve", "--port", "0", "--idle-timeout", "0"], "--idle-timeout"),
            (["serve", "--port", "0", "--body-timeout", "-1"], "--body-timeout"),
            (["serve", "--port", "0", "--max-connections", "0"], "--max-connections"),
        ]
        for (arguments, message) in cases {
            let run = try await Self.run(arguments)
            #expect(run.status == 2, "\(arguments): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains(message), "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
    }

    @Test func jsonOutputInInputOrderAndExitZeroWhenAllReady() async throws {
        let out = Scratch()
        try await withMediaServer { server in
            let urls = ["photo.jpg", "tone.m4a", "clip.mpg"].map { "\(server.baseURL)/media/\($0)" }
            let started = ContinuousClock.now
            let run = try await Self.run(["--allow-private-network", "--format", "json", "--out", out.path] + urls)
            let wall = Int((ContinuousClock.now - started).components.seconds * 1_000) + 1_000
            #expect(run.status == 0, "\(run.stderr)")
            let object = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            #expect(object["deadlineMs"] as? Int == 25_000)
            // The batch's own time: at least its slowest attachment's, at most the command's run.
            let elapsed = try #require(object["elapsedMs"] as? Int)
            let slowest = ((object["attachments"] as? [[String: Any]]) ?? []).compactMap { ($0["timings"] as? [String: Any])?["total"] as? Int }.max()
            #expect(elapsed >= (slowest ?? .max) && elapsed <= wall, "elapsed \(elapsed) ms, slowest \(slowest ?? -1) ms, run \(wall) ms")
            let attachments = try #require(object["attachments"] as? [[String: Any]])
            #expect(attachments.map { $0["url"] as? String } == urls)
            #expect(attachments.map { $0["status"] as? String } == ["ready", "ready", "ready"])
            #expect(out.tree() == ["attachment-0.jpg", "attachment-0.thumb.jpg", "attachment-1.m4a", "attachment-2.mpg",
                                   "attachment-2.thumb.jpg"])
        }
    }

    @Test func exitOneWhenAnyIsNotReadyAndPrivateNetworkRefusedByDefault() async throws {
        try await withMediaServer { server in
            let run = try await Self.run(["--format", "json", "\(server.baseURL)/media/photo.jpg"])
            #expect(run.status == 1)
            #expect(run.stdout.contains("\"forbiddenAddress\""))
            #expect(server.acceptedConnections == 0)
        }
    }

    /// `--verbose` says how the decoders are confined, as `serve` logs at start.
    @Test func verboseSaysHowTheDecodersAreConfined() async throws {
        let run = try await Self.run(["--verbose", "--format", "json", "--allow-private-network", "http://127.0.0.1:9/nothing.jpg"])
        let abi = kernelLandlockABI
        let expected = "decoders: worker processes, seccomp filter, " + (abi >= 1 ? "Landlock ABI \(abi)" : "no Landlock")
        #expect(run.stderr.contains(expected), "\(run.stderr)")
    }

    @Test func jsonlPrintsOneDescriptorPerLineAndReadsURLsFromStdin() async throws {
        let out = Scratch()
        try await withMediaServer { server in
            let input = """
            # comment
            \(server.baseURL)/media/photo.jpg

            \(server.baseURL)/media/document.pdf
            \(server.baseURL)/media/clip.avi
            """
            let run = try await Self.run(["--allow-private-network", "--format", "jsonl", "--input", "-", "--out", out.path], stdin: input)
            #expect(run.status == 1)
            let lines = run.stdout.split(separator: "\n")
            #expect(lines.count == 3)
            let statuses = try lines.map { line -> String in
                let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                return "\(object["identifier"]!)=\(object["status"]!)"
            }.sorted()
            #expect(statuses == ["attachment-0=ready", "attachment-1=rejected", "attachment-2=ready"])
        }
    }

    @Test func tableShowsOneRowPerAttachment() async throws {
        let out = Scratch()
        try await withMediaServer { server in
            let run = try await Self.run(["--allow-private-network", "--format", "table", "--out", out.path,
                                    "\(server.baseURL)/media/photo.jpg", "\(server.baseURL)/status/404"])
            #expect(run.status == 1)
            let lines = run.stdout.split(separator: "\n")
            #expect(lines.first?.contains("STATUS") == true)
            #expect(lines[1].contains("ready") && lines[1].contains("480x320"))
            #expect(lines[2].contains("failed") && lines[2].contains("httpStatus"))
            #expect(run.stdout.contains("1/2 ready"))
        }
    }

    @Test func clipAndThumbnailSizeReachThePipeline() async throws {
        let out = Scratch()
        try await withMediaServer { server in
            let run = try await Self.run(["--allow-private-network", "--format", "json", "--out", out.path,
                                    "--thumbnail-size", "100", "--clip", "0,0,0.5,1", "\(server.baseURL)/media/photo.jpg"])
            #expect(run.status == 0, "\(run.stderr)")
            let object = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            let thumbnail = try #require((object["attachments"] as? [[String: Any]])?.first?["thumbnail"] as? [String: Any])
            #expect(thumbnail["width"] as? Int == 75)
            #expect(thumbnail["height"] as? Int == 100)
        }
    }

    @Test func normalizingIsOnByDefaultAndNoNormalizeTurnsItOff() async throws {
        let out = Scratch()
        try await withMediaServer { server in
            let url = "\(server.baseURL)/media/image.heic"
            let converted = try await Self.run(["--allow-private-network", "--format", "json", "--out", out.path, url])
            #expect(converted.status == 0, "\(converted.stdout)")
            let object = try #require(JSONSerialization.jsonObject(with: Data(converted.stdout.utf8)) as? [String: Any])
            let attachment = try #require((object["attachments"] as? [[String: Any]])?.first)
            #expect(attachment["mimeType"] as? String == "image/jpeg")
            #expect(attachment["sourceMimeType"] as? String == "image/heic")
            #expect(attachment["transforms"] as? [String] == ["transcoded"])
            let strict = try await Self.run(["--allow-private-network", "--no-normalize", "--format", "jsonl", url])
            #expect(strict.status == 1)
            #expect(strict.stdout.contains("\"unsupportedType\""))
            #expect(strict.stdout.contains("converting it is turned off"))
            // --normalize, the flag style --transcode has, says the default aloud.
            let spelled = try await Self.run(["--allow-private-network", "--normalize", "--format", "jsonl", url])
            #expect(spelled.status == 0 && spelled.stdout.contains("\"image/jpeg\""), "\(spelled.stderr)")
        }
    }

    @Test func thumbnailTimeReachesThePoster() async throws {
        let out = Scratch()
        try await withMediaServer { server in
            let run = try await Self.run(["--allow-private-network", "--format", "json", "--out", out.path,
                                          "--thumbnail-time", "120", "\(server.baseURL)/media/long.mp4"])
            #expect(run.status == 0, "\(run.stderr)")
            let object = try #require(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            let attachment = try #require((object["attachments"] as? [[String: Any]])?.first)
            let time = try #require((attachment["thumbnail"] as? [String: Any])?["time"] as? Double)
            #expect(abs(time - 120) <= 0.5)
            #expect(attachment["videoCodec"] as? String == "h264")
            #expect((attachment["duration"] as? Double).map { abs($0 - 600) < 1 } == true)
        }
    }

    @Test func cidrFlagsReachThePolicy() async throws {
        let out = Scratch()
        try await withMediaServer { server in
            let url = "\(server.baseURL)/media/photo.jpg"
            let allowed = try await Self.run(["--allow-cidr", "127.0.0.1/32", "--format", "json", "--out", out.path, url])
            #expect(allowed.status == 0, "\(allowed.stdout)")
            let denied = try await Self.run(["--allow-private-network", "--deny-cidr", "127.0.0.0/8", "--format", "json", url])
            #expect(denied.status == 1, "\(denied.status): \(denied.stderr)")
            #expect(denied.stdout.contains("denied range 127.0.0.0/8"))
        }
    }

    @Test func jsonlPrintsLintLinesForPayloads() async throws {
        let out = Scratch()
        try await withMediaServer { server in
            let payload = #"{"aps": {"badge": 1}, "image_url": "\#(server.baseURL)/media/photo.jpg"}"#
            let run = try await Self.run(["--allow-private-network", "--format", "jsonl", "--payload", "-", "--out", out.path],
                                         stdin: payload)
            #expect(run.status == 1) // lint errors
            let lines = run.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            #expect(lines.count == 4)
            #expect(lines[0]["status"] as? String == "ready")
            let codes = lines.dropFirst().compactMap { ($0["lint"] as? [String: Any])?["code"] as? String }
            // The loopback server is plain http: App Transport Security would refuse it.
            #expect(codes == ["missingMutableContent", "noAlert", "atsNotCompliant"])
        }
    }
}
