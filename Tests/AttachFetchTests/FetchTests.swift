import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

@Suite struct FetchTests {
    @Test func redirectsAreFollowedUpToTheLimit() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.maxRedirects = 3 }) { pipeline in
            try await withMediaServer { server in
                let ok = await fetchOne("\(server.baseURL)/redirect/3/media/photo.jpg", pipeline)
                #expect(ok.status == .ready)
                #expect(ok.finalUrl == "\(server.baseURL)/media/photo.jpg")
                #expect(ok.url == "\(server.baseURL)/redirect/3/media/photo.jpg")
                let tooMany = await fetchOne("\(server.baseURL)/redirect/4/media/photo.jpg", pipeline)
                #expect(tooMany.status == .failed)
                #expect(tooMany.reason?.code == .tooManyRedirects)
            }
        }
    }

    @Test func defaultRedirectLimitIsFive() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                #expect(await fetchOne("\(server.baseURL)/redirect/5/media/photo.jpg", pipeline).status == .ready)
                #expect(await fetchOne("\(server.baseURL)/redirect/6/media/photo.jpg", pipeline).reason?.code == .tooManyRedirects)
            }
        }
    }

    @Test func redirectToAnotherSchemeIsRefused() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                for target in ["file:///etc/passwd", "ftp://127.0.0.1/x.jpg", "gopher://127.0.0.1/x", "dict://127.0.0.1/x"] {
                    let d = await fetchOne("\(server.baseURL)/redirect-to?url=\(target)", pipeline)
                    #expect(d.reason?.code == .unsupportedScheme, "\(target): \(d.reason?.message ?? "ready")")
                    #expect(d.status == .rejected)
                }
            }
        }
    }

    @Test(arguments: [404, 403, 500, 503])
    func errorStatusIsFailedWithTheStatusNamed(status: Int) async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/status/\(status)", pipeline)
                #expect(d.status == .failed)
                #expect(d.reason?.code == .httpStatus)
                #expect(d.reason?.message.contains("\(status)") == true)
                #expect(scratch.tree() == [])
            }
        }
    }

    @Test func non2xxWithoutLocationIsAnHTTPStatusFailure() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/status/304", pipeline)
                #expect(d.reason?.code == .httpStatus)
                #expect(d.reason?.message.contains("304") == true)
            }
        }
    }

    @Test(arguments: [
        ("", ReasonCode.invalidURL), ("not a url", .invalidURL), ("example.com/a.jpg", .invalidURL),
        ("http://", .invalidURL), ("ftp://127.0.0.1/a.jpg", .unsupportedScheme), ("file:///etc/passwd", .unsupportedScheme),
        ("data:image/png;base64,AAAA", .unsupportedScheme), ("javascript:alert(1)", .unsupportedScheme),
        ("gopher://127.0.0.1/", .unsupportedScheme),
    ])
    func badURLsAreRejectedWithoutARequest(url: String, code: ReasonCode) async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            let d = await fetchOne(url, pipeline)
            #expect(d.reason?.code == code, "\(url): \(d.reason?.message ?? "ready")")
            #expect(d.status == .rejected)
            #expect(d.url == url)
        }
    }

    @Test func refusedConnectionIsConnectFailed() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            // Port 1 on loopback: nothing listens there, so the connection is refused at once.
            let d = await fetchOne("http://127.0.0.1:1/photo.jpg", pipeline)
            #expect(d.reason?.code == .connectFailed)
            #expect(d.status == .failed)
        }
    }

    @Test func privateDestinationsAreRefusedByDefault() async throws {
        let scratch = Scratch()
        #expect(AttachFetchConfiguration().allowPrivateNetwork == false)
        // `loopback: false` is that default: the configuration is the default one but for its temp dir.
        try await withPipeline(scratch, loopback: false) { pipeline in
            try await withMediaServer { server in
                let port = server.port
                for url in ["http://127.0.0.1:\(port)/media/photo.jpg", "http://localhost:\(port)/media/photo.jpg",
                            "http://2130706433:\(port)/media/photo.jpg", "http://127.1:\(port)/media/photo.jpg"] {
                    let d = await fetchOne(url, pipeline)
                    #expect(d.reason?.code == .forbiddenAddress, "\(url): \(d.reason?.message ?? "ready")")
                    #expect(d.status == .rejected)
                }
                // Refused before connecting: the server never saw a request or even a connection.
                #expect(server.requestLog.isEmpty)
                #expect(server.acceptedConnections == 0)
            }
        }
    }

    @Test func ipv6LoopbackIsRefusedByDefaultAndAllowedWhenAsked() async throws {
        let scratch = Scratch()
        // `loopback: false`: the default address policy.
        try await withPipeline(scratch, loopback: false) { strict in
            try await withPipeline(scratch) { open in
                try await withMediaServer(host: .ipv6) { server in
                    let url = "\(server.baseURL)/media/photo.jpg"
                    #expect(await fetchOne(url, strict).reason?.code == .forbiddenAddress)
                    #expect(server.acceptedConnections == 0)
                    #expect(await fetchOne(url, open).status == .ready)
                }
            }
        }
    }

    @Test func oneDescriptorPerInputInInputOrder() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.maxConcurrentTransfers = 3 }) { pipeline in
            try await withMediaServer { server in
                let names = ["clip.mp4", "photo.jpg", "status", "tone.wav", "document.pdf", "photo.jpg", "bad", "alpha.png",
                             "clip.avi", "tone.mp3", "empty.bin", "animated.gif"]
                var requests: [AttachmentRequest] = []
                for (index, name) in names.enumerated() {
                    let url = switch name {
                    case "status": "\(server.baseURL)/status/404"
                    case "bad": "ftp://nowhere/x"
                    default: "\(server.baseURL)/media/\(name)?n=\(index)"
                    }
                    requests.append(AttachmentRequest(url: url, identifier: index % 2 == 0 ? "item-\(index)" : nil))
                }
                let batch = await pipeline.process(requests)
                #expect(batch.attachments.count == requests.count)
                for (index, d) in batch.attachments.enumerated() {
                    #expect(d.url == requests[index].url)
                    #expect(d.identifier == (index % 2 == 0 ? "item-\(index)" : "attachment-\(index)"))
                }
                let statuses = batch.attachments.map(\.status)
                #expect(statuses == [.ready, .ready, .failed, .ready, .rejected, .ready, .rejected, .ready, .ready, .ready, .rejected, .ready])
            }
        }
    }

    @Test func readyFilesAreTheOnlyFilesLeft() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let urls = ["media/photo.jpg", "media/truncated.jpg", "media/tone.mp3", "status/500", "media/document.pdf",
                            "synth/photo.jpg?bytes=20000000&length=none", "media/empty.bin", "media/alpha.png"]
                let batch = await pipeline.process(urls.enumerated().map {
                    AttachmentRequest(url: "\(server.baseURL)/\($0.element)", identifier: "f\($0.offset)")
                })
                let directory = try #require(batch.directory)
                #expect(fileMode(directory) == 0o700)
                let name = (directory as NSString).lastPathComponent
                // f5, 20 MB that sniffs as JPEG, is re-encoded to fit the image limit.
                #expect(scratch.tree() == [name, "\(name)/f0.jpg", "\(name)/f0.thumb.jpg", "\(name)/f2.mp3",
                                           "\(name)/f5.jpg", "\(name)/f5.thumb.jpg",
                                           "\(name)/f7.png", "\(name)/f7.thumb.png"].sorted())
                for d in batch.attachments where d.status == .ready {
                    #expect(FileManager.default.fileExists(atPath: d.file!))
                }
            }
        }
    }

    @Test func outputDirectoryReceivesReadyFilesAndNeverOverwrites() async throws {
        let scratch = Scratch()
        let out = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let requests = [AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg", identifier: "hero"),
                                AttachmentRequest(url: "\(server.baseURL)/media/tone.mp3", identifier: "../../etc/evil"),
                                AttachmentRequest(url: "\(server.baseURL)/media/document.pdf", identifier: "doc")]
                let first = await pipeline.process(requests, outputDirectory: out.path)
                #expect(first.attachments.map(\.status) == [.ready, .ready, .rejected])
                #expect(first.directory == out.path)
                // Identifiers are sanitized: no traversal, no hidden files.
                #expect(out.tree() == ["_.._etc_evil.mp3", "hero.jpg", "hero.thumb.jpg"])
                #expect(first.attachments[0].file == "\(out.path)/hero.jpg")
                #expect(scratch.tree() == [])
                // A second batch with the same identifiers must not overwrite the first one's files.
                let before = try Data(contentsOf: URL(fileURLWithPath: "\(out.path)/hero.jpg"))
                let second = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/rotated.jpg", identifier: "hero")],
                                                    outputDirectory: out.path)
                #expect(second.attachments[0].reason?.code == .ioError)
                #expect(second.attachments[0].reason?.message.contains("already exists") == true)
                #expect(try Data(contentsOf: URL(fileURLWithPath: "\(out.path)/hero.jpg")) == before)
                #expect(out.tree() == ["_.._etc_evil.mp3", "hero.jpg", "hero.thumb.jpg"])
            }
        }
    }

    /// The output directory is reported standardized: the shortcut that leaves a path as it is
    /// must agree with Foundation on every path it takes, and leave the others to it.
    @Test func outputDirectoryShortcutAgreesWithFoundation() async throws {
        let paths = ["/tmp/a", "/dev/shm/attach-fetch-serve-x/12/batch-AbC", "/a b/c", "/tmp/a.b/..c/c..", "/tmp/...",
                     "/tmp/a/", "/tmp//a", "/tmp/./a", "/tmp/a/.", "/tmp/a/..", "/tmp/../a", "/private/tmp", "/private",
                     "/privateer/x", "relative/dir", "./x", "~/x", "/", ""]
        for path in paths where BatchOutput.isStandard(path) {
            #expect(URL(fileURLWithPath: path).standardizedFileURL.path == path, "\(path)")
        }
        #expect(paths.filter(BatchOutput.isStandard) == ["/tmp/a", "/dev/shm/attach-fetch-serve-x/12/batch-AbC", "/a b/c",
                                                         "/tmp/a.b/..c/c..", "/tmp/..."])
        // Through the pipeline: a path the shortcut refuses is still reported standardized.
        let scratch = Scratch()
        let out = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg", identifier: "p")],
                                                   outputDirectory: "\(out.path)//./")
                #expect(batch.directory == out.path)
                #expect(batch.attachments[0].file == "\(out.path)/p.jpg")
            }
        }
    }

    @Test func missingOutputDirectoryBecomesIODescriptors() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            let batch = await pipeline.process([AttachmentRequest(url: "http://127.0.0.1:1/a.jpg"),
                                                AttachmentRequest(url: "http://127.0.0.1:1/b.jpg")],
                                               outputDirectory: "\(scratch.path)/does-not-exist")
            #expect(batch.attachments.map { $0.reason?.code } == [.ioError, .ioError])
        }
    }

    @Test func fileNamesAreSanitised() {
        #expect(FileNames.sanitize("../../etc/passwd") == "_.._etc_passwd")
        #expect(FileNames.sanitize("...hidden") == "hidden")
        #expect(FileNames.sanitize("") == "attachment")
        #expect(FileNames.sanitize("..") == "attachment")
        #expect(FileNames.sanitize("ok-Name_1.2") == "ok-Name_1.2")
        #expect(FileNames.sanitize("a/b\\c d\u{0}é") == "a_b_c_d__")
        #expect(FileNames.sanitize(String(repeating: "x", count: 500)).count == 100)
    }
}
