import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import AttachFetch

/// Bodies and thumbnails have no name until a caller's link gives them one (`UnnamedFile`):
/// nothing partial is ever visible, the work store holds no names, and a delivered file has
/// exactly one name, the caller's. The call counts themselves are `Benchmarks/syscall-guard`'s.
@Suite struct UnnamedWorkFileTests {
    /// While a body streams (the origin stalls after 1 KiB), the work store exists and the
    /// pipeline holds the body open, yet no file has a name anywhere under the temporary
    /// directory.
    @Test func aBodyStillStreamingHasNoName() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let fetching = Task { await fetchOne("\(server.baseURL)/stall/photo.jpg", pipeline, deadline: .milliseconds(1_500)) }
                var sawBodyOpen = false
                var named: [String] = []
                // Until the body is seen open, every poll also collects the names it finds.
                try await waitUntil("the body to be open in the work store") {
                    let open = Self.ownOpenFiles().filter { $0.hasPrefix(scratch.path + "/.attach-fetch-") && $0.hasSuffix("(deleted)") }
                    sawBodyOpen = !open.isEmpty
                    named += scratch.tree().filter { entry in
                        var status = stat()
                        return lstat(scratch.path + "/" + entry, &status) == 0 && (status.st_mode & S_IFMT) != S_IFDIR
                    }
                    return sawBodyOpen
                }
                let descriptor = await fetching.value
                #expect(sawBodyOpen, "the body was being written to an unnamed file in the work store")
                #expect(named.isEmpty, "names seen while the body streamed: \(named)")
                #expect(descriptor.status == .timedOut || descriptor.status == .failed)
                #expect(scratch.tree() == [], "\(scratch.tree())")
            }
        }
    }

    /// A ready image and its thumbnail are each one file with one name (link count 1: no
    /// working name is left in the work store), private and read-only (0400), in the caller's directory; and
    /// the pipeline holds nothing open once it is shut down.
    @Test func aDeliveredFileHasOneNameTheCallers() async throws {
        let scratch = Scratch(), output = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg"),
                                                    AttachmentRequest(url: "\(server.baseURL)/media/alpha.png")],
                                                   outputDirectory: output.path)
                for attachment in batch.attachments {
                    #expect(attachment.status == .ready, "\(attachment.reason?.message ?? "")")
                    for path in [attachment.file, attachment.thumbnail?.file].compactMap({ $0 }) {
                        var status = stat()
                        #expect(lstat(path, &status) == 0 && status.st_nlink == 1, "\(path): \(status.st_nlink) links")
                        #expect(status.st_mode & 0o777 == 0o400 && (status.st_mode & S_IFMT) == S_IFREG, "\(path)")
                        #expect(path.hasPrefix(output.path + "/"))
                    }
                }
                #expect(output.tree() == ["attachment-0.jpg", "attachment-0.thumb.jpg", "attachment-1.png", "attachment-1.thumb.png"],
                        "\(output.tree())")
            }
        }
        // The pipeline is shut down: its results are let go.
        #expect(Self.ownOpenFiles().filter { $0.hasPrefix(scratch.path + "/") }.isEmpty, "unnamed files still open")
        #expect(scratch.tree() == [], "\(scratch.tree())")
    }

    /// A closed ledger hands out no working path: the file it refuses is freed with the
    /// caller's reference, and its descriptor's number is soon another file's.
    @Test func aClosedLedgerHandsOutNoWorkingPath() throws {
        let scratch = Scratch()
        let ledger = FileLedger()
        let kept = try #require(UnnamedFile.create(in: scratch.path))
        #expect(ledger.own(kept) == kept.path)
        ledger.close()
        let late = try #require(UnnamedFile.create(in: scratch.path))
        #expect(ledger.own(late) == nil)
    }

    /// What this process's descriptors point to.
    static func ownOpenFiles() -> [String] { TestProcess.openFiles(getpid()) }
}
