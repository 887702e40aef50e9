import AttachFetchCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TestHelpers
import Testing

/// An unnamed file's working path (`/proc/self/fd/N`, with an extension for the libraries that
/// need one) and its size, read without moving the offset its writer shares.
@Suite struct UnnamedFilePathTests {
    /// The working path of an unnamed file: parsed, re-pointed and stripped of its extension.
    @Test func workingPathsNameTheirDescriptor() {
        #expect(UnnamedFile.descriptor(in: "/proc/self/fd/12") == 12)
        #expect(UnnamedFile.descriptor(in: "/proc/self/fd/12.jpg") == 12)
        #expect(UnnamedFile.descriptor(in: "/tmp/proc/self/fd/12") == nil)
        #expect(UnnamedFile.descriptor(in: "/proc/self/fd/x.jpg") == nil)
        #expect(UnnamedFile.openable("/proc/self/fd/7.png") == "/proc/self/fd/7")
        #expect(UnnamedFile.openable("/tmp/a.png") == "/tmp/a.png")
        #expect(UnnamedFile.replacingDescriptor(in: "/proc/self/fd/7.png", [7: 123]) == "/proc/self/fd/123.png")
        #expect(UnnamedFile.replacingDescriptor(in: "/proc/self/fd/8.png", [7: 123]) == "/proc/self/fd/8.png")
        #expect(UnnamedFile.replacingDescriptor(in: "/tmp/7.png", [7: 123]) == "/tmp/7.png")
        #expect(UnnamedFile.path(of: "/proc/self/fd/7", withExtension: "jpg") == "/proc/self/fd/7.jpg")
    }

    /// Reading a working file's size leaves its shared offset where its writer left it.
    @Test func sizeLeavesTheOffsetAlone() throws {
        let scratch = Scratch()
        let file = try #require(UnnamedFile.create(in: scratch.path))
        let bytes: [UInt8] = Array(repeating: 7, count: 10)
        #expect(bytes.withUnsafeBytes { write(file.descriptor, $0.baseAddress, $0.count) } == 10)
        #expect(lseek(file.descriptor, 4, SEEK_SET) == 4)
        #expect(UnnamedFile.size(of: file.path + ".jpg") == 10)
        #expect(lseek(file.descriptor, 0, SEEK_CUR) == 4, "size(of:) moved the offset")
        #expect(UnnamedFile.size(of: scratch.path + "/ordinary.jpg") == nil)
    }
}
