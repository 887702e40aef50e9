import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

extension ProcessWideSuites {
    /// The one list of stages, run by both runners: every file of TestMedia (and the generated
    /// oversize and pixel-bomb cases) through the pipeline over loopback (raced runner, decoder
    /// worker processes) and through `LocalMediaInspector` (inline runner, in this process) gives
    /// the same descriptor, apart from what only one side can know.
    @Suite struct StageEquivalenceTests {
        static let files: [String] = {
            let fm = FileManager.default
            let top = (try? fm.contentsOfDirectory(atPath: testMediaDirectory)) ?? []
            let cases = (try? fm.contentsOfDirectory(atPath: testMediaDirectory + "/cases")) ?? []
            return (top.filter { !$0.hasSuffix(".sh") && $0 != "cases" } + cases.map { "cases/" + $0 }).sorted()
        }()

        /// Made at test time: an image over the image limit (fitted), audio over the audio limit,
        /// and a small JPEG declaring more pixels than the budget.
        static let generated = ["oversize-noise.jpg", "oversize-silence.wav", "pixel-bomb.jpg"]

        @Test(arguments: files)
        func testMediaFile(_ name: String) async throws {
            // The server serves one directory's files by name.
            let path = "\(testMediaDirectory)/\(name)"
            try await expectSameDescriptor(directory: (path as NSString).deletingLastPathComponent,
                                           name: (path as NSString).lastPathComponent)
        }

        @Test(arguments: generated)
        func generatedCase(_ name: String) async throws {
            let media = Scratch()
            let path = "\(media.path)/\(name)"
            try await startLibraries() // libvips started for the writers below
            switch name {
            case "oversize-noise.jpg": try writeNoiseImage(path: path, width: 3000, height: 2400)
            case "pixel-bomb.jpg": try writeBlackJPEG(path: path, width: 10_000, height: 6_000, progressive: false)
            default:
                let made = try await tool("/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "anullsrc=r=44100:cl=stereo",
                                                       "-t", "40", "-y", path])
                #expect(made.status == 0)
            }
            let verdict = try await expectSameDescriptor(directory: media.path, name: name)
            // Each generated case is what it claims to be.
            switch name {
            case "oversize-noise.jpg": #expect(verdict.status == .ready && verdict.transforms?.isEmpty == false)
            case "pixel-bomb.jpg": #expect(verdict.reason?.code == .pixelLimitExceeded)
            default: #expect(verdict.reason?.code == .sizeLimitExceeded)
            }
        }

        @discardableResult
        func expectSameDescriptor(directory: String, name: String) async throws -> AttachmentDescriptor {
            let scratch = Scratch()
            let raced = try await withPipeline(scratch) { pipeline in
                try await withMediaServer(directory: directory) { server in
                    await fetchOne("\(server.baseURL)/media/\(name)", pipeline)
                }
            }
            var configuration = AttachFetchConfiguration()
            configuration.isolation = .none
            let inline = try LocalMediaInspector(configuration: configuration)
                .inspect(file: "\(directory)/\(name)", thumbnailBase: "\(scratch.path)/inline")
            #expect(comparable(raced) == comparable(inline), "\(name): raced \(raced.reason?.message ?? "ready"), inline \(inline.reason?.message ?? "ready")")
            // Both runners leave the delivered file and its thumbnail, and nothing else of theirs.
            for descriptor in [raced, inline] where descriptor.status == .ready {
                #expect(FileManager.default.fileExists(atPath: try #require(descriptor.file)))
                if let thumbnail = descriptor.thumbnail { #expect(FileManager.default.fileExists(atPath: thumbnail.file)) }
            }
            let inlineLeft = scratch.tree().filter { $0.hasPrefix("inline") }
            let inlineKept = [inline.file, inline.thumbnail?.file].compactMap { $0 }.filter { $0.hasPrefix(scratch.path) }
            #expect(inlineLeft.count == inlineKept.count, "\(name): the inspector left \(inlineLeft)")
            return raced
        }

        /// A descriptor without what only one runner can know: identifiers and URLs, the server's
        /// Content-Type and transport (ATS), paths, timings. A reason decided while downloading (the body's emptiness,
        /// a size refused while streaming, before the whole size is known) is worded for the
        /// network there and for a file here; its code must still agree.
        func comparable(_ descriptor: AttachmentDescriptor) -> AttachmentDescriptor {
            var d = descriptor
            d.identifier = ""
            d.url = ""
            d.finalUrl = nil
            d.declaredMimeType = nil
            d.ats = nil // a file has no transport to judge
            d.cache = nil // only the pipeline shares results
            d.file = d.file.map { _ in "" }
            d.thumbnail?.file = ""
            d.timings = .init(total: 0, thumbnail: d.timings.thumbnail.map { _ in 0 },
                              normalize: d.timings.normalize.map { _ in 0 }, probe: d.timings.probe.map { _ in 0 })
            if let reason = d.reason, reason.code == .emptyBody || (reason.code == .sizeLimitExceeded && d.bytes == nil) {
                d.reason?.message = ""
            }
            return d
        }
    }
}
