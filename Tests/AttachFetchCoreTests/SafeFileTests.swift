import AttachFetchCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TestHelpers
import Testing

/// New files are written one way (`SafeFile`): never over an existing file, synced, every call's
/// result checked.
@Suite struct SafeFileTests {
    @Test func aCopyHasExactlyItsModeAndNeverReplacesAFile() throws {
        let scratch = Scratch()
        let source = scratch.path + "/photo.jpg"
        try Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0) }).write(to: URL(fileURLWithPath: source))
        let destination = scratch.path + "/published.jpg"
        try SafeFile.copy(source, to: destination, mode: 0o644)
        var status = stat()
        #expect(stat(destination, &status) == 0 && status.st_mode & 0o777 == 0o644 && status.st_size == 200_000)
        #expect(throws: Reason.self) { try SafeFile.copy(source, to: destination, mode: 0o644) }
    }

    /// Into a working path, the bytes go into its own file from offset 0, by `pwrite`: the offset
    /// that the file's other holders share stays where it was.
    @Test func aNewFileIntoAnUnnamedFileIsWrittenFromItsStart() throws {
        let scratch = Scratch()
        let file = try #require(UnnamedFile.create(in: scratch.path))
        try SafeFile.writeNew(file.path + ".jpg", mode: 0o600) { emit in
            for chunk in [Array("first ".utf8), Array("second".utf8)] { chunk.withUnsafeBytes { emit($0) } }
        }
        var read = [UInt8](repeating: 0, count: 32)
        let count = read.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, $0.count, 0) }
        #expect(String(decoding: read.prefix(max(0, count)), as: UTF8.self) == "first second")
        #expect(lseek(file.descriptor, 0, SEEK_CUR) == 0, "the shared offset moved")
    }

    /// `create` never replaces a file: the one there keeps its bytes, and the message names it.
    @Test func createLeavesAnExistingFileAsItWas() throws {
        let scratch = Scratch()
        let path = scratch.path + "/taken"
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: path))
        let message = Array("mine".utf8).withUnsafeBytes { SafeFile.create(path, contents: $0) }
        #expect(message?.contains(path) == true, "\(message ?? "no message")")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "someone else's")
    }
}
