import Foundation
import LoopbackHTTPServer
import Logging
import Testing
@testable import AttachFetch

extension DeadlineBoundSuites {
    /// The library as a Swift service uses it: a stream of results, shutdown, a logger per call,
    /// failures that keep what is known, and the inspector on its own.
    // Serialized: a test times how soon batches fail after shutdown.
    @Suite(.serialized) struct LibraryAPITests {
        @Test func descriptorsStreamYieldsEachAttachmentOnceWithItsIndex() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    let names = ["photo.jpg", "tone.mp3", "document.pdf", "alpha.png"]
                    let requests = names.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)", identifier: $0) }
                    var seen: [Int: AttachmentDescriptor] = [:]
                    for await finished in pipeline.descriptors(for: requests, deadline: .seconds(20)) {
                        #expect(seen[finished.index] == nil, "index \(finished.index) yielded twice")
                        seen[finished.index] = finished.descriptor
                    }
                    #expect(seen.count == names.count)
                    for (index, name) in names.enumerated() { #expect(seen[index]?.identifier == name) }
                    #expect(seen[2]?.reason?.code == .unsupportedType)
                    #expect(seen[0]?.status == .ready && seen[1]?.status == .ready && seen[3]?.status == .ready)
                }
            }
        }

        /// `keepingFiles: false`: the verdict without files. No directory is made or written to
        /// (not even the one given), no descriptor names a local file (the JSON leaves the paths
        /// out), from the work or from the cache; and nothing is left once the pipeline is gone.
        @Test func aBatchThatKeepsNoFilesMakesNoDirectoryAndNamesNoFile() async throws {
            let scratch = Scratch(), output = Scratch()
            try await withMediaServer { server in
                let requests = ["animated.gif", "photo.jpg", "document.pdf"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") }
                let (first, second) = try await withPipeline(scratch, { $0.platforms = [.ios, .android]; $0.cache = ResultCaching() }) { pipeline in
                    (await pipeline.process(requests, outputDirectory: output.path, keepingFiles: false),
                     await pipeline.process(requests, outputDirectory: output.path, keepingFiles: false))
                }
                for (batch, status) in [(first, AttachmentDescriptor.CacheStatus.miss), (second, .hit)] {
                    #expect(batch.directory == nil)
                    let gif = batch.attachments[0], photo = batch.attachments[1]
                    #expect(gif.status == .ready && photo.status == .ready && gif.cache == status && photo.cache == status)
                    #expect(gif.file == nil && photo.file == nil && gif.sha256 != nil && photo.width != nil)
                    #expect(gif.thumbnail?.file == "" && (gif.thumbnail?.width ?? 0) > 0)
                    let still = try #require(gif.variants?["android"])
                    #expect(still.file == nil && still.mimeType != nil && still.sha256 != nil, "the variant is described, not given")
                    #expect(batch.attachments[2].reason?.code == .unsupportedType)
                    let json = try JSONWriter.string(gif)
                    #expect(!json.contains("\"file\"") && !json.contains(scratch.path), "\(json)")
                    let read = try JSONDecoder().decode(AttachmentDescriptor.self, from: Data(json.utf8))
                    #expect(read == gif, "a thumbnail without a file reads back")
                }
                #expect(output.tree() == [], "the given directory is not used")
                #expect(scratch.tree() == [], "nothing is left: \(scratch.tree())")
            }
        }

        @Test func leavingTheStreamEarlyCancelsTheRest() async throws {
            let scratch = Scratch()
            // Stall timeout and deadline a minute away: a silent request's connection that closes
            // within 15 s was cancelled, not timed out.
            try await withPipeline(scratch, { $0.timeout.stall = .seconds(60); $0.timeout.request = .seconds(60) }) { pipeline in
                try await withMediaServer { server in
                    let requests = [AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg")]
                        + (0..<3).map { AttachmentRequest(url: "\(server.baseURL)/fault/silent?n=\($0)") }
                    for await finished in pipeline.descriptors(for: requests, deadline: .seconds(60)) {
                        #expect(finished.index == 0)
                        break
                    }
                    // Their connections close; only the finished request's stays, kept alive by libcurl.
                    try await waitUntil("the silent requests' connections to close", timeout: .seconds(15)) { server.openConnections <= 1 }
                }
            }
        }

        @Test("afterShutdownBatchesFailAtOnceAsCancelled, within 300 ms of slack") func afterShutdownBatchesFailAtOnceAsCancelled() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    #expect(await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline).status == .ready)
                    // The calls under test (withPipeline's own shutdown afterwards is a third, also harmless).
                    await pipeline.shutdown()
                    await pipeline.shutdown() // twice is harmless
                    let started = ContinuousClock.now
                    let d = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline)
                    #expect(d.reason?.code == .cancelled && d.reason?.message == "the pipeline was shut down")
                    #expect(ContinuousClock.now - started < timingSlack)
                }
            }
        }

        @Test func aLoggerPerCallGetsThatBatchsDebugMessagesOnly() async throws {
            let scratch = Scratch()
            let captured = CapturedLog()
            var logger = Logger(label: "test") { _ in captured }
            logger.logLevel = .trace
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    _ = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg")], logger: logger)
                    _ = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg")]) // default: silent
                }
            }
            let entries = captured.entries
            #expect(entries.map(\.message) == ["batch started", "batch finished"])
            #expect(entries.allSatisfy { $0.level <= .debug }, "the library logs at debug and trace only")
        }

        /// A failure keeps what was learned before it: the type, size and digest of the bytes,
        /// the source facts, the network timings.
        @Test func aFailureDescriptorKeepsEveryFactAlreadyKnown() async throws {
            let scratch = Scratch()
            let path = "\(testMediaDirectory)/truncated.jpg"
            let d = try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in await fetchOne("\(server.baseURL)/media/truncated.jpg", pipeline) }
            }
            #expect(d.reason?.code == .corruptMedia)
            #expect(d.file == nil && d.thumbnail == nil)
            #expect(d.finalUrl?.hasSuffix("/media/truncated.jpg") == true)
            #expect(d.declaredMimeType != nil)
            #expect(d.mimeType == "image/jpeg" && d.kind == .image && d.sourceMimeType == "image/jpeg")
            #expect(d.bytes == fileSize(path) && d.sourceBytes == fileSize(path))
            #expect(try d.sha256 == sha256sum(path))
            #expect(d.transforms == [])
            #expect(d.timings.download != nil)
            #expect(scratch.tree() == [])
        }

        /// The inspector on its own: the caller's file is never touched, the digest is the file's,
        /// a conversion is delivered beside the thumbnail, and nothing else is left.
        @Test func inspectorLeavesTheCallersFileAndDeliversBesideTheThumbnail() throws {
            let scratch = Scratch()
            let inspector = try LocalMediaInspector()
            let photo = "\(testMediaDirectory)/photo.jpg"
            let plain = inspector.inspect(file: photo, thumbnailBase: "\(scratch.path)/photo")
            #expect(plain.status == .ready && plain.file == photo)
            #expect(try plain.sha256 == sha256sum(photo))
            #expect(plain.timings.thumbnail != nil)
            #expect(scratch.tree() == ["photo.jpg"])

            let webp = "\(testMediaDirectory)/image.webp"
            let before = try sha256sum(webp)
            let converted = inspector.inspect(file: webp, thumbnailBase: "\(scratch.path)/webp")
            #expect(converted.status == .ready && converted.transforms == [.transcoded])
            #expect(converted.file == "\(scratch.path)/webp.delivered.\(converted.fileExtension ?? "?")")
            #expect(try converted.sha256 == sha256sum(try #require(converted.file)))
            #expect(converted.timings.normalize != nil)
            #expect(try sha256sum(webp) == before)

            let corrupt = inspector.inspect(file: "\(testMediaDirectory)/truncated.jpg", thumbnailBase: "\(scratch.path)/cut")
            #expect(corrupt.reason?.code == .corruptMedia)
            #expect(scratch.tree().filter { $0.hasPrefix("cut") } == [])
        }
    }
}
