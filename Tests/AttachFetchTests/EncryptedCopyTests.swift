import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import AttachFetch

/// The encrypted copy for publishing is written as every new file is (`SafeFile`): never over an
/// existing file; into an unnamed file, from its start.
@Suite struct EncryptedCopyTests {
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
}
