@testable import AttachFetchDevice
import EncryptedContent
import Foundation
import Synchronization
import LoopbackHTTPServer
import Testing

/// The device fetches an object in ranges, so that only one range is ever queued ahead of the
/// decryption: whole over several ranges, and every answer that is not the range asked for is
/// refused at its headers, before its body is read.
@Suite struct DeviceRangeTests {
    /// 10 MB in ranges of 1 MiB: ten requests, each for the next range, and the very bytes.
    @Test func anObjectComesWholeInOneRequestPerRange() async throws {
        let key = randomKey()
        let plaintext = randomBytes(10_000_000)
        let object = try encrypt(plaintext, key: key, recordSize: AES128GCM.defaultRecordSize)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let asked = RangesAsked()
        let objects = serve(["/big.bin": object])
        try await withServer({ request, connection in
            asked.add(request.headers["range"] ?? "none")
            objects(request, connection)
        }) { server in
            let fetcher = EncryptedAttachmentFetcher(directory: directory, rangeBytes: 1 << 20)
            let results = try await fetcher.fetch(userInfo: notification([entry("big", url: "\(server.baseURL)/big.bin", key: key, plaintext: plaintext)]),
                                                  deadline: Date().addingTimeInterval(30))
            let fetched = try results[0].get()
            #expect(try Data(contentsOf: fetched.fileURL) == Data(plaintext))
            let expected = stride(from: 0, to: object.count, by: 1 << 20).map { "bytes=\($0)-\($0 + (1 << 20) - 1)" }
            #expect(asked.all == expected)
        }
    }

    /// A server without ranges may send a small object whole; a larger one it sends whole is
    /// refused before its body is read, and the server sends little of it.
    @Test func aServerThatIgnoresRangesIsTakenOnlyForAnObjectOfOneRange() async throws {
        let key = randomKey()
        let small = randomBytes(100_000)
        let smallObject = try encrypt(small, key: key, recordSize: AES128GCM.defaultRecordSize)
        let total = 300_000_000
        let head = header(recordSize: UInt32(AES128GCM.defaultRecordSize), keyID: key.keyID)
        let filler = randomBytes(64 * 1024)
        try await withServer({ request, connection in
            if request.path == "/whole.bin" {
                stream(head, then: filler, total: total, tag: "whole", ignoringRange: true, on: connection, request: request)
            } else {
                connection.respond(status: 200, contentType: "application/octet-stream", body: smallObject)
            }
        }) { server in
            let userInfo = notification([
                entry("small", url: "\(server.baseURL)/small.bin", key: key, plaintext: small),
                entry("whole", url: "\(server.baseURL)/whole.bin", key: key, plaintext: [], bytes: 40_000_000),
            ])
            let warm = notification([entry("warm-up", url: "\(server.baseURL)/small.bin", key: key, plaintext: small)])
            let report = try await probe(warmUp: warm, userInfo, seconds: 60)
            #expect(report.results.first?.ok == true && report.results.first?.bytes == small.count)
            let refused = try #require(report.results.last)
            #expect(!refused.ok && refused.code == "transferFailed" && refused.message?.contains("honours Range") == true, "\(refused)")
            #expect(report.growthBytes < 4 << 20, "peak memory grew \(report.growthBytes >> 20) MiB")
            let sent = server.counter("whole")
            #expect(sent < 16 << 20, "the server sent \(sent) bytes of a refused body")
            print("a server ignoring ranges, 300 MB: \(refused.code ?? "-"), peak memory +\(report.growthBytes >> 10) KiB, \(sent) bytes sent")
        }
    }

    enum WrongAnswer: String, CaseIterable, Sendable {
        /// A range that starts elsewhere than asked.
        case otherStart
        /// More bytes than asked for.
        case longerRange
        /// A Content-Length that is not the range's length.
        case lengthLie
        /// No total length.
        case unknownTotal
        /// The second range's total is not the first's.
        case totalChanges
        /// Fewer bytes than the headers stated, then the connection closes.
        case shortBody
    }

    /// Each wrong answer fails the attachment with `transferFailed`, naming what was wrong, and
    /// leaves no file.
    @Test(arguments: WrongAnswer.allCases)
    func anAnswerThatIsNotTheRangeAskedForIsRefused(_ wrong: WrongAnswer) async throws {
        let key = randomKey()
        let plaintext = randomBytes(300_000)
        let object = try encrypt(plaintext, key: key, recordSize: 4_096)
        let range = 100_000
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withServer({ request, connection in
            guard let asked = request.byteRange(ofLength: object.count) else {
                return connection.respond(status: 400, reason: "Bad Request", body: [])
            }
            var (first, last, total) = (asked.lowerBound, asked.upperBound - 1, "\(object.count)")
            var length = last - first + 1
            switch wrong {
            case .otherStart: first += 1; length -= 1
            case .longerRange: last = min(object.count - 1, last + 10); length = last - first + 1
            case .lengthLie: length += 1
            case .unknownTotal: total = "*"
            case .totalChanges: if first > 0 { total = "\(object.count + 1)" }
            case .shortBody: break
            }
            let body = Array(object[first..<min(object.count, first + length)])
            connection.sendHead(status: 206, reason: "Partial Content", contentType: "application/octet-stream", contentLength: length,
                                extraHeaders: [("Content-Range", "bytes \(first)-\(last)/\(total)")])
            connection.send(wrong == .shortBody ? Array(body.prefix(length / 2)) : body)
            if wrong == .shortBody { connection.mustClose = true }
        }) { server in
            let fetcher = EncryptedAttachmentFetcher(directory: directory, rangeBytes: Int64(range))
            let results = try await fetcher.fetch(userInfo: notification([entry("object", url: "\(server.baseURL)/o.bin", key: key, plaintext: plaintext)]),
                                                  deadline: Date().addingTimeInterval(20))
            guard case .failure(let error) = results[0] else { Issue.record("\(wrong): delivered"); return }
            #expect(error.code == .transferFailed, "\(wrong): \(error)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        }
    }
}

/// Each download decrypts in its own task, and the session's callbacks only check, open and
/// resume: one download held in its decryption holds up no other download.
@Suite struct DeviceIndependenceTests {
    @Test func aDownloadHeldInItsDecryptionHoldsUpNoOther() async throws {
        let key = randomKey()
        let (heldPlaintext, otherPlaintext) = (randomBytes(300_000), randomBytes(200_000))
        let objects = serve(["/held.bin": try encrypt(heldPlaintext, key: key, recordSize: 4_096),
                             "/other.bin": try encrypt(otherPlaintext, key: key, recordSize: 4_096)])
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let gate = DecryptionGate()
        try await withServer(objects) { server in
            let fetcher = EncryptedAttachmentFetcher(directory: directory, maxBytes: 1 << 20, rangeBytes: 4 << 20, configuration: .ephemeral,
                                                     beforeDecrypting: { identifier in if identifier == "held" { await gate.hold() } })
            let held = notification([entry("held", url: "\(server.baseURL)/held.bin", key: key, plaintext: heldPlaintext)])
            async let heldResults = fetcher.fetch(userInfo: held, deadline: Date().addingTimeInterval(60))
            try await gate.waitUntilHolding()
            let other = notification([entry("other", url: "\(server.baseURL)/other.bin", key: key, plaintext: otherPlaintext)])
            let otherResults = try await fetcher.fetch(userInfo: other, deadline: Date().addingTimeInterval(10))
            #expect(try otherResults[0].get().bytes == Int64(otherPlaintext.count))
            #expect(gate.isHolding, "the held download was let go before the other one was done")
            gate.release()
            #expect(try await heldResults[0].get().bytes == Int64(heldPlaintext.count))
        }
    }
}

/// Holds whoever calls `hold()` until `release()`.
final class DecryptionGate: Sendable {
    private let state = Mutex<(holding: Bool, released: Bool)>((false, false))
    var isHolding: Bool { state.withLock { $0.holding } }

    func hold() async {
        state.withLock { $0.holding = true }
        while !state.withLock({ $0.released }) { try? await Task.sleep(for: .milliseconds(5)) }
        state.withLock { $0.holding = false }
    }

    func release() { state.withLock { $0.released = true } }

    func waitUntilHolding() async throws {
        for _ in 0..<6_000 where !isHolding { try await Task.sleep(for: .milliseconds(5)) }
        try #require(isHolding, "the held download never reached its decryption")
    }
}

/// The `Range` headers a server was sent, in order.
final class RangesAsked: Sendable {
    private let values = Mutex<[String]>([])
    func add(_ value: String) { values.withLock { $0.append(value) } }
    var all: [String] { values.withLock { $0 } }
}
