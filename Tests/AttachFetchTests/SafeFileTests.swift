import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import AttachFetch

/// New files are written one way (`SafeFile.writeNew`): never over an existing file, synced, every
/// call's result checked. The encrypted copy for publishing is written that way too.
@Suite struct SafeFileTests {
    private func plaintext(in scratch: Scratch) throws -> FileToPublish {
        let path = scratch.path + "/photo.jpg"
        try Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0) }).write(to: URL(fileURLWithPath: path))
        return .init(path: path, sha256: nil, suffix: "jpg")
    }

    @Test func anEncryptedCopyNeverReplacesAnExistingFile() throws {
        let scratch = Scratch()
        let file = try plaintext(in: scratch)
        let output = scratch.path + "/copy.enc"
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: output))
        let encryption = try MediaEncryption(secret: [UInt8](repeating: 7, count: 32))
        #expect(throws: Reason.self) { try EncryptedCopy.make(file, with: encryption, output: output) }
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "someone else's")
    }

    @Test func anEncryptedCopyIntoAnUnnamedFileFillsItFromTheStart() throws {
        let scratch = Scratch()
        let file = try plaintext(in: scratch)
        let output = try #require(UnnamedFile.create(in: scratch.path))
        let encryption = try MediaEncryption(secret: [UInt8](repeating: 7, count: 32))
        let made = try EncryptedCopy.make(file, with: encryption, output: output.path)
        #expect(made.bytes > 200_000 && UnnamedFile.size(of: output.path) == made.bytes)
        // Written with pwrite: the offset other holders share is where it was.
        #expect(lseek(output.descriptor, 0, SEEK_CUR) == 0)
        #expect(made.file.sha256 == (try Publisher.hash(output.path)))
    }

    @Test func aCopyHasExactlyItsModeAndNeverReplacesAFile() throws {
        let scratch = Scratch()
        let file = try plaintext(in: scratch)
        let destination = scratch.path + "/published.jpg"
        try SafeFile.copy(file.path, to: destination, mode: 0o644)
        var status = stat()
        #expect(stat(destination, &status) == 0 && status.st_mode & 0o777 == 0o644 && status.st_size == 200_000)
        #expect(throws: Reason.self) { try SafeFile.copy(file.path, to: destination, mode: 0o644) }
    }
}
