import AttachFetchDevice
import EncryptedContent
import Foundation
import LoopbackHTTPServer
import Synchronization
import Testing

/// Whatever a server answers, the fetcher's memory stays bounded: an answer's bytes go to a
/// file as the transfer reads them, never into a queue for a delegate, and an answer that is
/// not the range asked for is cancelled. Each answer streams 300 MB as
/// fast as loopback allows, behind a header claiming records of 2^32-1 bytes, ten times in a
/// row, with both cores kept busy.
@Suite struct DeviceHostileAnswerTests {
    enum Answer: String, CaseIterable, Sendable {
        /// `200 OK`, the `Range` ignored, no `Content-Length` and `Connection: close`.
        case wholeOfUnstatedLength
        /// `200 OK`, the `Range` ignored, with a `Content-Length` larger than one range.
        case wholeLargerThanARange
        /// `206` with the range's `Content-Range` and `Content-Length`, then more bytes than stated.
        case longerThanStated
        /// `206` with the range's `Content-Range`, chunked, with chunks that never end.
        case chunkedWithoutEnd
    }

    static let total = 300_000_000

    /// What FoundationNetworking keeps of what a download task reads, until the task ends:
    /// measured 2.0 % (3.8, 5.4, 6.1, 8.0 and 13.1 MiB for 186, 269, 300, 400 and 654 MB read
    /// before a cancellation took effect), with 3 % allowed. A cancellation that lags behind a
    /// loopback's reads lets it grow with them; the 172 MiB a delegate's queue took for 300 MB
    /// (57 %) is far past it.
    static let linuxShareOfRead = 0.03

    @Test(arguments: Answer.allCases)
    func memoryStaysBoundedWhateverTheAnswer(_ answer: Answer) async throws {
        let key = randomKey()
        let warm = randomBytes(10_000)
        let warmObject = try encrypt(warm, key: key, recordSize: 4_096)
        let hostile = header(recordSize: UInt32.max, keyID: key.keyID)
        let filler = randomBytes(1 << 20)
        try await withServer({ request, connection in
            guard request.path == "/hostile.bin" else { return serve(["/warm.bin": warmObject])(request, connection) }
            Self.answer(answer, head: hostile, filler: filler, on: connection, request: request)
        }) { server in
            let userInfo = notification([entry("hostile", url: "\(server.baseURL)/hostile.bin", key: key, plaintext: [], bytes: 40_000_000)])
            let warmUp = notification([entry("warm-up", url: "\(server.baseURL)/warm.bin", key: key, plaintext: warm)])
            let spinners = BusyCores(count: 2)
            defer { spinners.stop() }
            var growths: [Int] = []
            var (mostSent, mostLeft) = (0, 0)
            for run in 1...10 {
                let before = server.counter(answer.rawValue)
                let report = try await probe(warmUp: warmUp, userInfo, seconds: 60)
                let result = try #require(report.results.first)
                #expect(report.warmUp == [true], "run \(run)")
                #expect(!result.ok, "run \(run): \(result)")
                // What reached the disk before the cancellation took effect: reported, not bounded
                // (FoundationNetworking runs a cancellation on its work queue, behind the reads).
                let sent = server.counter(answer.rawValue) - before
                // 4 MiB, and FoundationNetworking's 2 % of what a task read (`linuxShareOfRead`).
                #expect(report.growthBytes < 4 << 20 + Int(Double(sent) * Self.linuxShareOfRead),
                        "run \(run): peak memory grew \(report.growthBytes >> 10) KiB after \(sent >> 20) MiB were sent")
                mostSent = max(mostSent, sent)
                mostLeft = max(mostLeft, report.leftoverBytes)
                growths.append(report.growthBytes)
                if run == 10 {
                    print("\(answer.rawValue): \(result.code ?? "-"); at most \(mostSent) bytes sent, \(mostLeft) left in the session's temporary directory")
                }
            }
            print("\(answer.rawValue): peak memory grew \(growths.map { "\($0 >> 10)" }.joined(separator: ", ")) KiB over ten runs, two cores busy")
        }
    }

    /// Sends `answer` to a request for the object's first range, counting the body's bytes
    /// under the answer's name, as fast as the connection takes them.
    static func answer(_ answer: Answer, head: [UInt8], filler: [UInt8], on connection: HTTPConnection, request: HTTPRequest) {
        let asked = request.byteRange(ofLength: total) ?? 0..<total
        let tag = answer.rawValue
        let rangeHeader = ("Content-Range", "bytes \(asked.lowerBound)-\(asked.upperBound - 1)/\(total)")
        let started: Bool
        switch answer {
        case .wholeOfUnstatedLength:
            started = connection.sendHead(status: 200, contentType: "application/octet-stream", contentLength: nil)
        case .wholeLargerThanARange:
            started = connection.sendHead(status: 200, contentType: "application/octet-stream", contentLength: total)
        case .longerThanStated:
            started = connection.sendHead(status: 206, reason: "Partial Content", contentType: "application/octet-stream",
                                          contentLength: asked.count, extraHeaders: [rangeHeader])
        case .chunkedWithoutEnd:
            started = connection.send("HTTP/1.1 206 Partial Content\r\nContent-Type: application/octet-stream\r\n"
                + "Transfer-Encoding: chunked\r\nContent-Range: \(rangeHeader.1)\r\n\r\n")
        }
        guard started else { return }
        let chunked = answer == .chunkedWithoutEnd
        var block = head + filler
        var sent = 0
        while sent < total {
            let frame = chunked ? Array("\(String(block.count, radix: 16))\r\n".utf8) + block + Array("\r\n".utf8) : block
            guard connection.send(frame) else { break }
            sent += block.count
            connection.serverForCounting.count(tag, block.count)
            block = filler
        }
        connection.mustClose = true
    }
}

/// Threads that keep `count` cores busy until stopped: the fetcher's transfer thread and its
/// delegate queue then compete for the cores, as on a phone doing other work.
final class BusyCores: Sendable {
    private let running = Atomic<Bool>(true)

    init(count: Int) {
        for _ in 0..<count {
            Thread { [self] in
                var x: UInt64 = 1
                while self.running.load(ordering: .relaxed) { x = x &* 6364136223846793005 &+ 1442695040888963407 }
                if x == 0 { print("") }
            }.start()
        }
    }

    func stop() { running.store(false, ordering: .relaxed) }
}
