import AttachFetch
import AttachFetchRuntime
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The URLs to fetch: those on the command line, then the lines of `--input`, read a chunk at
/// a time as the batch asks for more. A file of a million lines is never held whole: the first
/// descriptors are out while the last lines are still unread.
struct InputURLs: AsyncSequence {
    typealias Element = String
    typealias Failure = Never

    private let arguments: [String]
    /// `--input`'s lines: a path, or "-" for standard input.
    private let file: LineReader?

    init(arguments: [String], input: String?) {
        self.arguments = arguments
        self.file = input.map(LineReader.init(path:))
    }

    /// Why `--input` could not be read (whole), once the URLs were read; nil when it was.
    var failure: String? { file?.failure }

    /// Iterated once: the file is read as the one iterator goes.
    func makeAsyncIterator() -> Iterator { Iterator(arguments: arguments, file: file) }

    struct Iterator: AsyncIteratorProtocol {
        private var arguments: ArraySlice<String>
        private let file: LineReader?

        init(arguments: [String], file: LineReader?) {
            self.arguments = arguments[...]
            self.file = file
        }

        /// The next URL: blank lines and lines starting with # are skipped, spaces trimmed.
        mutating func next(isolation actor: isolated (any Actor)?) async -> String? {
            if let url = arguments.popFirst() { return url }
            guard let file else { return nil }
            while let line = await file.nextLine() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                return trimmed
            }
            return nil
        }

        mutating func next() async -> String? { await next(isolation: nil) }
    }
}

/// The lines of a file, read 64 KiB at a time off the cooperative pool (a read of standard input
/// may wait as long as its writer). Used by one task at a time, in turn (the batch's, which pulls
/// one URL at a time); the class is only a place for the buffer between those calls.
final class LineReader: @unchecked Sendable {
    // @unchecked: `descriptor`, `buffer`, `lines`, `nextInLines`, `ended` and `failure` are
    // changed only by `nextLine`, which the batch calls one call at a time, each awaited before
    // the next (`Deadline.race` pulls from one task at a time); `failure` is read once the batch
    // has returned. The blocking read gets the descriptor by value and hands back its bytes.
    private let path: String
    private var descriptor: Int32 = -1
    private var buffer: [UInt8] = []
    private var lines: [Substring] = []
    private var nextInLines = 0
    private var ended = false
    /// Set when the input could not be read (the run then exits 1).
    private(set) var failure: String?

    init(path: String) { self.path = path }

    deinit { if descriptor > 2 { close(descriptor) } }

    /// The next line, without its line break; nil at the end (or after a failed read).
    func nextLine() async -> String? {
        while nextInLines == lines.count {
            guard !ended else { return nil }
            (lines, nextInLines) = ([], 0)
            await fill()
        }
        defer { nextInLines += 1 }
        return String(lines[nextInLines])
    }

    private func fill() async {
        if descriptor < 0 {
            descriptor = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
            if descriptor < 0 {
                failure = "--input \(path) cannot be read: \(String(cString: strerror(errno)))"
                ended = true
                return
            }
        }
        let fd = descriptor
        let (chunk, error) = await BlockingWork.run { () -> ([UInt8], Int32) in
            var bytes = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count >= 0 { return (Array(bytes[..<count]), 0) }
                if errno != EINTR { return ([], errno) }
            }
        }
        if error != 0 {
            failure = "--input \(path): \(String(cString: strerror(error)))"
        }
        if chunk.isEmpty {
            ended = true
            if !buffer.isEmpty { split(String(decoding: buffer, as: UTF8.self)) }
            buffer = []
            return
        }
        buffer += chunk
        // Only whole lines are decoded: a character cut by the chunk's end waits for the rest.
        guard let last = buffer.lastIndex(of: UInt8(ascii: "\n")) else { return }
        split(String(decoding: buffer[...last], as: UTF8.self))
        buffer.removeSubrange(...last)
    }

    /// Any line break counts, as in a file read whole (`\r\n`, `\r`, U+2028 …).
    private func split(_ text: String) {
        lines += text.split(whereSeparator: \.isNewline)
    }
}
