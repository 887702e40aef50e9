import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

/// What docs/cli.md, docs/service.md and docs/descriptor.md say of these cases, held to the
/// real binary and the real library.
@Suite struct DocumentedBehaviourTests {
    @Test func serveTakesDeadlineAsTheDefaultOfARequestThatGivesNone() async throws {
        let scratch = Scratch()
        try await withMediaServer { media in
            let (process, port) = try launchServe(["--allow-private-network", "--deadline", "5", "--max-deadline", "20"],
                                                  environment: ["TMPDIR": scratch.path])
            defer { process.terminate(); process.waitUntilExit() }
            let base = "http://127.0.0.1:\(port)"
            let plain = try await Exchange.post("\(base)/v1/attachments", json: #"{"urls": ["\#(media.baseURL)/media/photo.jpg"]}"#)
            #expect(plain.json["deadlineMs"] as? Int == 5000, "\(plain.text)")
            // A request's own deadline still wins, clipped to --max-deadline.
            let own = try await Exchange.post("\(base)/v1/attachments", json: #"{"urls": ["\#(media.baseURL)/media/photo.jpg"], "deadlineMs": 60000}"#)
            #expect(own.json["deadlineMs"] as? Int == 20000)
        }
    }

    /// A --deadline above --max-deadline still starts (the options are a contract), and says so
    /// at start, naming both values and the deadline a request without one gets.
    @Test func serveWarnsOfADeadlineAboveTheMaximum() async throws {
        let scratch = Scratch(), log = ServeLog()
        let (process, port) = try launchServe(["--deadline", "30", "--max-deadline", "20"], environment: ["TMPDIR": scratch.path], log: log)
        defer { process.terminate(); process.waitUntilExit() }
        #expect(port > 0)
        #expect(log.text.contains("--deadline 30 is above --max-deadline 20") && log.text.contains("gets 20 s"), "\(log.text)")
        let quietLog = ServeLog()
        let (quiet, quietPort) = try launchServe(["--deadline", "10", "--max-deadline", "20"], environment: ["TMPDIR": scratch.path], log: quietLog)
        defer { quiet.terminate(); quiet.waitUntilExit() }
        #expect(quietPort > 0 && quietLog.text.contains("listening on"))
        #expect(!quietLog.text.contains("above --max-deadline"), "\(quietLog.text)")
    }

    /// A clip that reaches past the unit square's edge, which the schema cannot forbid
    /// (schemathesis sent y 0.727, height 0.2787), is cut at the edge; one with no part in the
    /// square is a 400 naming the rule.
    @Test func aClipPastTheEdgeIsCutAndOneOutsideIsRefused() async throws {
        let scratch = Scratch()
        try await withMediaServer { media in
            let (process, port) = try launchServe(["--allow-private-network"], environment: ["TMPDIR": scratch.path])
            defer { process.terminate(); process.waitUntilExit() }
            let base = "http://127.0.0.1:\(port)"
            let url = "\(media.baseURL)/media/photo.jpg"
            let past = try await Exchange.post("\(base)/v1/attachments", json: #"{"requests": [{"url": "\#(url)", "clip": {"x": 0, "y": 0.727, "width": 1, "height": 0.2787}}]}"#)
            #expect(past.status == 200, "\(past.text)")
            let attachment = try #require((past.json["attachments"] as? [[String: Any]])?.first)
            #expect(attachment["status"] as? String == "ready", "\(attachment)")
            let thumbnail = try #require(attachment["thumbnail"] as? [String: Any])
            let (width, height) = (try #require(thumbnail["width"] as? Int), try #require(thumbnail["height"] as? Int))
            // photo.jpg's lowest 27.3 %: much wider than high.
            #expect(width > 2 * height, "\(thumbnail)")
            let outside = try await Exchange.post("\(base)/v1/attachments", json: #"{"requests": [{"url": "\#(url)", "clip": {"x": 1, "y": 0, "width": 0.5, "height": 0.5}}]}"#)
            #expect(outside.status == 400 && outside.text.contains("from 0 to under 1"), "\(outside.status) \(outside.text)")
        }
    }

    @Test func serveListsNoOptionItWouldRefuse() async throws {
        let serveHelp = try await CLITests.run(["serve", "--help"])
        #expect(serveHelp.status == 0 && !serveHelp.stdout.contains("--rewrite"))
        #expect(serveHelp.stdout.contains("--deadline") && serveHelp.stdout.contains("--max-host-connections"))
        let fetchHelp = try await CLITests.run(["fetch", "--help"])
        #expect(fetchHelp.stdout.contains("--rewrite"))
        // The single-run options a service takes per request point to the request's parameter.
        for (option, parameter) in [("--rewrite", "?rewrite=true"), ("--strip-failed", "?stripFailed=true")] {
            let refused = try await CLITests.run(["serve", "--port", "0", option])
            #expect(refused.status == 2 && refused.stderr.contains(option) && refused.stderr.contains(parameter), "\(refused.stderr)")
            #expect(!refused.stderr.contains("Unknown option"), "\(refused.stderr)")
        }
        #expect(!serveHelp.stdout.contains("--strip-failed"))
    }

    @Test func aRefusedBodyReadWholeKeepsItsSizeAndHash() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { media in
                let refused = await fetchOne("\(media.baseURL)/media/document.pdf", pipeline)
                #expect(refused.reason?.code == .unsupportedType)
                #expect(refused.bytes == fileSize("\(testMediaDirectory)/document.pdf"))
                let expected = try sha256sum("\(testMediaDirectory)/document.pdf")
                #expect(refused.sha256 == expected)
                // A body cut off at a refused type, not read whole, has no hash of its own.
                let cut = await fetchOne("\(media.baseURL)/synth/document.pdf?bytes=200000", pipeline)
                #expect(cut.reason?.code == .unsupportedType && cut.sha256 == nil && cut.bytes == nil)
            }
        }
    }

    @Test func theJSONDocumentNamesItsDirectoryWhenFilesWereKept() async throws {
        let scratch = Scratch()
        try await withMediaServer { media in
            // No --out and nothing ready: the batch's own directory is removed, and not named.
            let nothing = try await CLITests.run(["--allow-private-network", "--format", "json", "\(media.baseURL)/status/404"],
                                                 environment: ["TMPDIR": scratch.path])
            let document = try JSONSerialization.jsonObject(with: Data(nothing.stdout.utf8)) as? [String: Any]
            #expect(nothing.status == 1 && document?["directory"] == nil && scratch.tree() == [], "\(nothing.stdout)")
            // With --out it is always named, ready or not.
            let out = try await CLITests.run(["--allow-private-network", "--format", "json", "--out", scratch.path, "\(media.baseURL)/status/404"])
            let named = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
            #expect(named?["directory"] as? String == scratch.path)
        }
    }
}
