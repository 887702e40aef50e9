import AttachFetch
import AttachFetchService
import Foundation
import LoopbackHTTPServer
import Testing

/// The CLI's output when the URLs are streamed: the JSON document written as descriptors come
/// is the document written at once, and `--input -` answers the first lines before the last is read.
@Suite struct StreamedOutputTests {
    @Test func theDocumentWrittenInPiecesIsTheDocumentWrittenAtOnce() throws {
        var descriptors: [AttachmentDescriptor] = []
        for index in 0..<5 {
            var descriptor = AttachmentDescriptor(identifier: "attachment-\(index)", url: "http://127.0.0.1/\(index).jpg",
                                                  status: index == 2 ? .failed : .ready, timings: .init(total: index * 7))
            if index == 2 { descriptor.reason = AttachmentDescriptor.Reason(code: .httpStatus, message: "404 \"Not Found\"\nsecond line") }
            descriptor.transforms = index == 3 ? [] : nil
            descriptors.append(descriptor)
        }
        for directory in ["/tmp/a \"b\"/c", nil] {
            let batch = AttachmentBatch(attachments: descriptors, elapsed: .milliseconds(1234), deadline: .seconds(8), directory: directory)
            var pieces = ""
            var document = OrderedBatchDocument { pieces += $0 }
            // Finished out of order, as a batch's descriptors are.
            for index in [3, 1, 0, 4, 2] { try document.add(index, descriptors[index]) }
            try document.finish(elapsed: batch.elapsed, deadline: batch.deadline, directory: batch.directory)
            #expect(pieces == (try JSONWriter.string(BatchDocument(batch), layout: .pretty)))
        }
    }

    @Test func standardInputIsAnsweredLineByLine() async throws {
        let scratch = Scratch()
        try await withMediaServer { server in
            let urls = (0..<4).map { "\(server.baseURL)/media/photo.jpg?n=\($0)" }
            let lines = try await offPool { () throws -> [String] in
                let process = Process()
                process.executableURL = CLITests.executable
                process.arguments = ["--allow-private-network", "--format", "jsonl", "--out", scratch.path, "--input", "-"]
                let out = Pipe(), input = Pipe()
                process.standardOutput = out
                process.standardInput = input
                try process.run()
                input.fileHandleForWriting.write(Data((urls[0..<2].joined(separator: "\n") + "\n").utf8))
                // The first two are answered while standard input is still open.
                var text = ""
                let until = Date().addingTimeInterval(60)
                while text.split(separator: "\n").count < 2, Date() < until {
                    let data = out.fileHandleForReading.availableData
                    if data.isEmpty { break }
                    text += String(decoding: data, as: UTF8.self)
                }
                let early = text.split(separator: "\n").count
                input.fileHandleForWriting.write(Data((urls[2...].joined(separator: "\n") + "\n").utf8))
                try input.fileHandleForWriting.close()
                text += String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                #expect(early == 2, "\(early) answered before the rest was written")
                #expect(process.terminationStatus == 0)
                return text.split(separator: "\n").map(String.init)
            }
            let identifiers = lines.compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["identifier"] as? String
            }
            #expect(identifiers.sorted() == (0..<4).map { "attachment-\($0)" })
        }
    }

    /// A million-line `--input` file is read as the batch asks for lines: the first results
    /// are out while the file descriptor's offset (read from /proc) is still near its start.
    @Test func aMillionLineInputIsAnsweredBeforeItsLastLineIsRead() async throws {
        let scratch = Scratch()
        try await withMediaServer { server in
            let path = scratch.path + "/urls.txt"
            let line = "\(server.baseURL)/media/photo.jpg?n="
            var text = ""
            text.reserveCapacity(1_000_000 * (line.utf8.count + 8))
            for index in 0..<1_000_000 { text += line; text += String(index); text += "\n" }
            try text.write(toFile: path, atomically: false, encoding: .utf8)
            let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            let out = scratch.path + "/out"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
            let (answered, offset) = try await offPool { () throws -> (Int, Int?) in
                let process = Process()
                process.executableURL = CLITests.executable
                process.arguments = ["--allow-private-network", "--format", "jsonl", "--out", out, "--deadline", "3600", "--input", path]
                let output = Pipe()
                process.standardOutput = output
                process.standardError = FileHandle.nullDevice
                try process.run()
                defer {
                    kill(process.processIdentifier, SIGKILL)
                    process.waitUntilExit()
                }
                var received = ""
                let until = Date().addingTimeInterval(60)
                while !received.contains("\n"), Date() < until {
                    let data = output.fileHandleForReading.availableData
                    if data.isEmpty { break }
                    received += String(decoding: data, as: UTF8.self)
                }
                // How far the input has been read now.
                return (received.split(separator: "\n").count, try TestProcess.offset(of: path, in: process.processIdentifier))
            }
            #expect(answered >= 1, "a result before the input was read to its end")
            let position = try #require(offset, "the input file is still open while the batch runs")
            #expect(position < size / 10, "read \(position) of \(size) bytes when the first result came")
        }
    }
}
