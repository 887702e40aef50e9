import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

/// Every fenced code block of README.md and docs/*.md is accounted for, like a doctest: a shell
/// block marked `<!-- run -->` on the line before it runs here, against the real binary and a
/// loopback origin; a Swift block marked `<!-- compiled -->` is the body of a test below, word
/// for word; any other says `<!-- not run: why -->`. An example that stops working fails.
///
/// Before a shell block runs, the hosts and paths in it are replaced by loopback ones (the
/// `substitutions` below; no other host may be left), `attach-fetch` gets
/// `--allow-private-network` (the origin is loopback) and may exit 0 or 1 (1: not every
/// attachment ready, a verdict), `curl` fails on an HTTP error, and a block that talks to
/// `localhost:8080` without starting a service gets one started as `docs/service.md` shows.
@Suite struct DocExampleTests {
    struct Block: Sendable, CustomTestStringConvertible {
        let file: String
        let line: Int
        let language: String
        let text: String
        let marker: String?
        var testDescription: String { "\(file):\(line)" }
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The fenced blocks of README.md and docs/*.md, with the comment on the line before each.
    static func blocks() -> [Block] {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: "\(root)/docs"))?.filter { $0.hasSuffix(".md") }.sorted() ?? []
        var found: [Block] = []
        for file in ["README.md"] + docs.map({ "docs/\($0)" }) {
            guard let text = try? String(contentsOfFile: "\(root)/\(file)", encoding: .utf8) else { continue }
            let lines = text.components(separatedBy: "\n")
            var index = 0
            while index < lines.count {
                guard lines[index].hasPrefix("```") else { index += 1; continue }
                let language = String(lines[index].dropFirst(3)).trimmingCharacters(in: .whitespaces)
                let start = index
                index += 1
                var body: [String] = []
                while index < lines.count && !lines[index].hasPrefix("```") { body.append(lines[index]); index += 1 }
                index += 1
                let before = start > 0 ? lines[start - 1].trimmingCharacters(in: .whitespaces) : ""
                let marker = before.hasPrefix("<!--") && before.hasSuffix("-->")
                    ? String(before.dropFirst(4).dropLast(3)).trimmingCharacters(in: .whitespaces) : nil
                found.append(Block(file: file, line: start + 1, language: language, text: body.joined(separator: "\n"), marker: marker))
            }
        }
        return found
    }

    static func shellBlocks() -> [Block] { blocks().filter { $0.marker == "run" } }

    @Test func everyExampleIsRunCompiledOrSaysWhyNot() {
        let all = Self.blocks()
        #expect(all.count >= 15, "the docs' blocks were not found under \(Self.root)")
        for block in all {
            let marker = block.marker ?? ""
            #expect(marker == "run" || marker == "compiled" || (marker.hasPrefix("not run: ") && marker.count > 12),
                    "\(block.file):\(block.line) has no <!-- run -->, <!-- compiled --> or <!-- not run: why --> before it")
            if marker == "run" { #expect(block.language == "sh", "\(block.file):\(block.line): only sh blocks run") }
            if marker == "compiled" { #expect(block.language == "swift", "\(block.file):\(block.line)") }
        }
        #expect(all.contains { $0.marker == "run" } && all.contains { $0.marker == "compiled" })
    }

    @Test(arguments: DocExampleTests.shellBlocks())
    func shellExampleRuns(_ block: Block) async throws {
        let scratch = Scratch()
        let work = "\(scratch.path)/work", origin = "\(scratch.path)/origin"
        for directory in [work, origin, "\(work)/push-media", "\(work)/spool", "\(work)/Pictures"] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        for (name, source) in [("a.jpg", "photo.jpg"), ("v.mp4", "clip.mp4"), ("photo.jpg", "photo.jpg")] {
            try FileManager.default.copyItem(atPath: "\(testMediaDirectory)/\(source)", toPath: "\(origin)/\(name)")
        }
        try FileManager.default.copyItem(atPath: "\(testMediaDirectory)/photo.jpg", toPath: "\(work)/Pictures/holiday.jpg")
        try await withMediaServer(directory: origin) { server in
            let base = server.baseURL
            try Self.writeFixtures(in: work, origin: base)
            let servicePort = try LoopbackSockets.freePort()
            let picturesPort = try LoopbackSockets.freePort()
            let substitutions: [(String, String)] = [
                ("https://cdn.example.com/", "\(base)/media/"),
                ("/srv/push-media", "\(work)/push-media"),
                ("/var/spool/push-media", "\(work)/spool"),
                ("/etc/attach-fetch/tokens", "\(work)/tokens"),
                ("localhost:8080", "127.0.0.1:\(servicePort)"),
                ("--port 8080", "--port \(servicePort)"),
                ("~/Pictures", "\(work)/Pictures"),
                ("http.server 8000", "http.server \(picturesPort)"),
                ("127.0.0.1:8000", "127.0.0.1:\(picturesPort)"),
                // The suite has built the binary already (in debug): no second, release build.
                ("swift build -c release && export PATH=\"$PWD/.build/release:$PATH\"", ":"),
                ("<sha256>.jpg", "$(cd \(work)/push-media && ls *.jpg | head -n 1)"),
            ]
            var script = block.text
            for (from, to) in substitutions { script = script.replacingOccurrences(of: from, with: to) }
            // Nothing may leave the machine: every media host was replaced by the loopback one.
            #expect(!script.contains("cdn.example.com") && !script.contains("localhost:"), "\(script)")
            script = Self.backgroundingServe(script, port: servicePort)
            let needsService = script.contains("127.0.0.1:\(servicePort)") && !script.contains("attach-fetch serve")
            let prelude = """
                exec 2>&1
                set -eo pipefail
                export PATH="\(URL(fileURLWithPath: builtExecutable("attach-fetch")).deletingLastPathComponent().path):$PATH"
                export TOKEN=doc-example-token
                AF_BIN="\(builtExecutable("attach-fetch"))"
                # SIGKILL: a child may inherit SIGTERM ignored from the test process.
                trap 'status=$?; pids=$(jobs -p); [ -z "$pids" ] || kill -KILL $pids 2>/dev/null; wait 2>/dev/null; exit $status' EXIT
                attach-fetch() {
                  local status=0
                  case "$1" in
                    # Always in the background here (see backgroundingServe): the job is then the
                    # service itself, which the trap below stops.
                    serve) shift; exec "$AF_BIN" serve --allow-private-network "$@" ;;
                    prune) command attach-fetch "$@" || status=$? ;;
                    *) command attach-fetch --allow-private-network "$@" || status=$? ;;
                  esac
                  if [ "$status" -gt 1 ]; then echo "attach-fetch exited $status" >&2; return "$status"; fi
                  return 0
                }
                curl() { command curl --fail-with-body --noproxy '*' --max-time 30 "$@"; }
                af_ready() {
                  for _ in $(seq 1 200); do command curl -s -o /dev/null "http://127.0.0.1:$1/healthz" && return 0; sleep 0.05; done
                  echo "no service on port $1" >&2; return 1
                }
                \(needsService ? Self.backgroundingServe("attach-fetch serve --port \(servicePort) --token-file \(work)/tokens --publish-dir \(work)/push-media --public-base https://media.example.com/push --platforms ios,android", port: servicePort) : "")
                """
            let command = "cd \(work) && " + prelude + "\n" + script
            let run = try await offPool { try runChild("/bin/bash", ["-c", command]) }
            #expect(run.status == 0, "\(block.file):\(block.line) exited \(run.status):\n\(script)\n--- output ---\n\(run.output)")
            // Where the example prints the JSON document, it is there.
            if script.contains("--format json") { #expect(run.output.contains("\"attachments\""), "\(run.output)") }
        }
    }

    /// `attach-fetch serve …` (with its continuation lines) runs in the background, and the
    /// block goes on once the service answers.
    static func backgroundingServe(_ script: String, port: Int) -> String {
        var lines = script.components(separatedBy: "\n")
        guard let start = lines.firstIndex(where: { $0.hasPrefix("attach-fetch serve") }) else { return script }
        var end = start
        while end < lines.count - 1 && lines[end].hasSuffix("\\") { end += 1 }
        lines[end] += " &\naf_ready \(port)"
        return lines.joined(separator: "\n")
    }

    /// The files the examples name: a URL list, an APNs payload, an FCM message, a token file.
    static func writeFixtures(in work: String, origin: String) throws {
        func write(_ name: String, _ text: String) throws { try text.write(toFile: "\(work)/\(name)", atomically: true, encoding: .utf8) }
        try write("urls.txt", "\(origin)/media/a.jpg\n\(origin)/media/v.mp4\n")
        try write("notification.json", """
            {"aps": {"alert": {"title": "Hi", "body": "There"}, "mutable-content": 1},
             "image_url": "\(origin)/media/a.jpg", "data": {"media": {"url": "\(origin)/media/v.mp4"}}}
            """)
        let fcm = try String(contentsOfFile: "\(root)/Tests/Payloads/fcm-notification-apns-override.json", encoding: .utf8)
            .replacingOccurrences(of: "{{BASE}}", with: origin)
        try write("fcm.json", fcm)
        try write("fcm-message.json", fcm)
        try write("tokens", "doc-example-token\n")
        chmod("\(work)/tokens", 0o600)
    }

    // MARK: The payload examples

    /// docs/payloads.md's provider table: each row's example payload (with `{…}` an aps that
    /// runs an extension and `https://…/` a media host) is found under a key the row names, and
    /// lints without an error.
    @Test func thePayloadTableExamplesAreFoundWhereTheRowsSay() throws {
        let text = try String(contentsOfFile: "\(Self.root)/docs/payloads.md", encoding: .utf8)
        var checked = 0
        for line in text.split(separator: "\n") where line.hasPrefix("| ") && line.contains("| `{") {
            let cells = line.dropFirst(2).components(separatedBy: " | ")
            guard cells.count >= 3 else { continue }
            let example = cells[2].trimmingCharacters(in: CharacterSet(charactersIn: "` |"))
                .replacingOccurrences(of: "{…}", with: #"{"alert": {"title": "Hi", "body": "There"}, "mutable-content": 1}"#)
                .replacingOccurrences(of: "https://…/", with: "https://cdn.example.com/")
            let payload = try PushPayload(data: Data(example.utf8))
            let media = payload.media()
            #expect(!media.isEmpty, "\(cells[0]): no media found in \(example)")
            let keys = DocumentedNames.namesInBackticks(cells[1])
            for item in media {
                // Keys with dots in them are quoted in a path ("com.batch".at.u); the table writes them bare.
                let path = item.path.replacingOccurrences(of: #"\[\d+\]"#, with: "", options: .regularExpression)
                    .replacingOccurrences(of: "\"", with: "")
                #expect(keys.contains { path == $0 || path.hasPrefix($0 + ".") || path.hasSuffix("." + $0) || path.contains($0) },
                        "\(cells[0]): media at \(item.path), which the row does not name (\(keys.sorted()))")
            }
            let errors = payload.lint(media: media).filter { $0.severity == .error }
            #expect(errors.isEmpty, "\(cells[0]): \(errors.map { "\($0.code) at \($0.path)" })")
            checked += 1
        }
        #expect(checked >= 9, "the provider table's examples were not found")
    }

    // MARK: The Swift examples, word for word

    /// README.md's library example: the lines between the markers, less those ending in
    /// `// doc-test only`, with `origin` and `spool` written as the doc has them, are the block.
    @Test func theLibraryExampleRunsAsWritten() async throws {
        let scratch = Scratch()
        try await withMediaServer { server in
            let origin = "\(server.baseURL)/media/photo.jpg?doc=", spool = scratch.path
            // BEGIN README.md
            var configuration = AttachFetchConfiguration()       // documented defaults
            configuration.allowPrivateNetwork = true  // doc-test only
            configuration.timeout = .init(connect: .seconds(3), request: .seconds(8), stall: .seconds(2))
            let pipeline = try AttachmentPipeline(configuration: configuration)   // share one per process

            let batch = await pipeline.process(
                [AttachmentRequest(url: "\(origin)a.jpg", identifier: "hero",
                                   clip: try ClippingRectangle(x: 0, y: 0, width: 1, height: 0.5))],
                deadline: .seconds(20),
                outputDirectory: spool)         // optional; default: a new temp directory
            for attachment in batch.attachments where attachment.status == .ready {
                print(attachment.file!, attachment.thumbnail?.file ?? "-")
            }
            await pipeline.shutdown()
            // END README.md
            #expect(batch.attachments[0].status == .ready && batch.attachments[0].thumbnail != nil)
        }
        try Self.expectSnippet(marker: "README.md", equalsBlockIn: ["README.md", "docs/library.md"])
    }

    /// The region of this file between `// BEGIN marker` and `// END marker`, as the docs write it.
    static func snippet(_ marker: String) throws -> String {
        let source = try String(contentsOfFile: #filePath, encoding: .utf8).components(separatedBy: "\n")
        guard let begin = source.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "// BEGIN \(marker)" }),
              let end = source.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "// END \(marker)" }) else { return "" }
        let lines = source[(begin + 1)..<end].filter { !$0.hasSuffix("// doc-test only") }
        let indent = lines.filter { !$0.isEmpty }.map { $0.prefix { $0 == " " }.count }.min() ?? 0
        return lines.map { String($0.dropFirst(min(indent, $0.count))) }.joined(separator: "\n")
            .replacingOccurrences(of: "\"\\(origin)", with: "\"https://cdn.example.com/")
            .replacingOccurrences(of: "outputDirectory: spool)", with: "outputDirectory: \"/var/spool/push-media\")")
    }

    static func expectSnippet(marker: String, equalsBlockIn files: [String]) throws {
        let code = try snippet(marker)
        for file in files {
            let block = blocks().first { $0.file == file && $0.marker == "compiled" }
            // The doc's block starts with its import, which a test file has at its top.
            let text = block?.text.replacingOccurrences(of: "import AttachFetch\n\n", with: "")
            #expect(text == code, "\(file)'s Swift example differs from the compiled one:\n\(text ?? "(none)")\n--- compiled ---\n\(code)")
        }
    }
}
