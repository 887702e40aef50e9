@testable import AttachFetchService
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import ServiceTestHelpers
import TestHelpers

/// The rules of one connection's timers, decided without sockets: each event goes in with the
/// time it happened.
@Suite struct ConnectionTimersTests {
    let start = ContinuousClock.now

    func machine() -> ConnectionTimers {
        ConnectionTimers(idleTimeout: .seconds(30), bodyTimeout: .seconds(10), grace: .seconds(1), now: start)
    }

    @Test func anIdleConnectionClosesAtTheIdleTimeoutAndNotBefore() {
        var timers = machine()
        #expect(timers.deadline == start + .seconds(30))
        #expect(timers.timerFired(now: start + .seconds(29)) == .none)
        #expect(timers.timerFired(now: start + .seconds(30)) == .close(.idle))
        #expect(timers.deadline == nil, "closed: no timer")
    }

    @Test func aBodyThatKeepsComingIsNeverTimedOutButOneThatStallsIs() {
        var timers = machine()
        timers.readHead(now: start + .seconds(1))
        #expect(timers.deadline == start + .seconds(11), "the body timeout replaces the idle one")
        for second in stride(from: 5, through: 60, by: 5) {
            timers.readBodyPart(now: start + .seconds(second))
            #expect(timers.timerFired(now: start + .seconds(second) + .milliseconds(9_999)) == .none)
        }
        #expect(timers.timerFired(now: start + .seconds(70)) == .failBody, "10 s since the last part")
        #expect(timers.deadline == start + .seconds(71), "the 408 has a second's grace")
        #expect(timers.wroteEnd(now: start + .seconds(70.2)) == .close(.bodyTimeout), "closed once the 408 is written")
    }

    @Test func aTimedOutBodyWhoseAnswerNeverComesIsClosedAfterTheGrace() {
        var timers = machine()
        timers.readHead(now: start)
        #expect(timers.timerFired(now: start + .seconds(10)) == .failBody)
        #expect(timers.timerFired(now: start + .seconds(10.5)) == .none)
        #expect(timers.timerFired(now: start + .seconds(11)) == .close(.bodyTimeout))
    }

    @Test func aRequestBeingAnsweredHasNoTimerHoweverLongItTakes() {
        var timers = machine()
        timers.readHead(now: start)
        timers.readEnd()
        #expect(timers.deadline == nil, "a batch in flight, or an NDJSON stream, is not idle")
        #expect(timers.timerFired(now: start + .seconds(3_600)) == .none)
        #expect(timers.wroteEnd(now: start + .seconds(100)) == .none)
        #expect(timers.deadline == start + .seconds(130), "idle again from the response's end")
    }

    @Test func pipelinedRequestsKeepTheConnectionBusyUntilTheLastResponse() {
        var timers = machine()
        timers.readHead(now: start)
        timers.readEnd()
        timers.readHead(now: start + .seconds(1))
        timers.readEnd()
        #expect(timers.wroteEnd(now: start + .seconds(2)) == .none)
        #expect(timers.deadline == nil, "one response still owed")
        #expect(timers.wroteEnd(now: start + .seconds(3)) == .none)
        #expect(timers.deadline == start + .seconds(33))
    }
}

extension ServiceTimerSuites {
    /// Slow and careless clients against the real service over real sockets on 127.0.0.1.
    // Serialized: the tests time the service's idle and body timeouts and count the process's descriptors.
    @Suite(.serialized) struct ConnectionLimitTests {
        @Test func halfSentHeadsAreClosedWithinTheIdleTimeout() async throws {
            let scratch = Scratch()
            let service = try await RunningServer.start(scratch) { $0.connections.idleTimeout = .seconds(2) }
            let before = try openDescriptors()
            let port = service.port
            let outcome = try await offPool {
                try RawClients.attack(port: port, count: 1_000, send: "POST /v1/attachments HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                                      waitAtMost: .seconds(8))
            }
            let slowest = try #require(outcome.closedAfter.map { $0 ?? .seconds(999) }.max())
            #expect(outcome.closedAfter.allSatisfy { $0 != nil }, "\(outcome.closedAfter.filter { $0 == nil }.count) of 1,000 never closed")
            #expect(slowest <= .seconds(4), "closed within the idle timeout plus 2 s (slowest: \(slowest))")
            #expect(outcome.closedAfter.compactMap { $0 }.min()! >= .milliseconds(1_900), "not before the idle timeout")
            #expect(outcome.received.allSatisfy { $0.isEmpty }, "a half-sent head gets no answer, only the close")
            let after = try openDescriptors()
            #expect(abs(after - before) <= 10, "descriptors before \(before), after \(after)")
            let metrics = try await Exchange.send("GET", "\(service.base)/metrics").text
            #expect(metricValue(metrics, #"attach_fetch_connections_closed_total{reason="idle"}"#) ?? 0 >= 1_000, "\(metrics)")
            await service.stop()
        }

        @Test func stalledBodiesGet408WithinTheBodyTimeout() async throws {
            let scratch = Scratch()
            let service = try await RunningServer.start(scratch) { $0.connections.bodyTimeout = .seconds(2) }
            let port = service.port
            let head = "POST /v1/attachments HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
            let outcome = try await offPool { try RawClients.attack(port: port, count: 200, send: head, waitAtMost: .seconds(8)) }
            let answered = outcome.received.map { String(decoding: $0, as: UTF8.self) }
            #expect(answered.allSatisfy { $0.hasPrefix("HTTP/1.1 408") && $0.contains(#""code":"requestTimeout""#) },
                    "\(answered.filter { !$0.hasPrefix("HTTP/1.1 408") }.prefix(3))")
            #expect(outcome.closedAfter.allSatisfy { $0 != nil && $0! <= .seconds(4) }, "each closed within the body timeout plus 2 s")
            #expect(outcome.closedAfter.compactMap { $0 }.min() ?? .zero >= .milliseconds(1_900), "not before the body timeout")
            let metrics = try await Exchange.send("GET", "\(service.base)/metrics").text
            #expect(metricValue(metrics, #"attach_fetch_connections_closed_total{reason="bodyTimeout"}"#) == 200)
            #expect(metricValue(metrics, #"attach_fetch_requests_total{route="/v1/attachments",status="408"}"#) == 200)
            await service.stop()
        }

        @Test func connectionsPastTheLimitAreClosedWhileEstablishedOnesKeepWorking() async throws {
            let scratch = Scratch()
            let service = try await RunningServer.start(scratch) { $0.connections.maxConnections = 100 }
            let port = service.port
            let (refusedAnswer, again, metrics) = try await offPool {
                let established = try (0..<100).map { _ in try RawClient(port: port) }
                defer { established.forEach { $0.close() } }
                for client in established {
                    guard try client.exchange("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").hasPrefix("HTTP/1.1 200") else {
                        throw RawClients.Failure("an established connection's /healthz failed")
                    }
                }
                let extra = try RawClient(port: port)
                defer { extra.close() }
                try extra.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                let refused = extra.readUntilClosed(timeout: .seconds(3))
                let again = try established[0].exchange("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                let metrics = try established[1].exchange("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                return (refused, again, metrics)
            }
            #expect(refusedAnswer.closed && refusedAnswer.bytes.isEmpty, "connection 101 is closed at once, unanswered")
            #expect(again.hasPrefix("HTTP/1.1 200"), "established connections keep working")
            #expect(metricValue(metrics, #"attach_fetch_connections_closed_total{reason="limit"}"#) == 1, "\(metrics)")
            #expect(metricValue(metrics, "attach_fetch_connections_open ") == 100)
            // Once the hundred have gone, new connections are taken again.
            var status = 0
            for _ in 0..<50 where status != 200 {
                status = (try? await Exchange.send("GET", "\(service.base)/healthz").status) ?? 0
                if status != 200 { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(status == 200)
            await service.stop()
        }

        @Test func aSlowButSteadyBodyIsServed() async throws {
            let scratch = Scratch()
            let service = try await RunningServer.start(scratch) {
                $0.connections.bodyTimeout = .seconds(2)
                $0.connections.idleTimeout = .seconds(2)
            }
            try await withMediaServer { media in
                // 6 KiB of JSON, 1 KiB every 500 ms: 3 s in all, past both timeouts, never 2 s without a byte.
                let opening = #"{"urls": ["\#(media.baseURL)/media/photo.jpg"]"#
                let body = Array((opening + String(repeating: " ", count: 6_144 - opening.utf8.count - 1) + "}").utf8)
                let port = service.port
                let started = ContinuousClock.now
                let answer = try await offPool {
                    let client = try RawClient(port: port)
                    defer { client.close() }
                    try client.send("POST /v1/attachments HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n")
                    for piece in stride(from: 0, to: body.count, by: 1_024) {
                        // The subject: a client that sends 1 KiB every 500 ms.
                        usleep(500_000)
                        try client.send(bytes: Array(body[piece..<min(body.count, piece + 1_024)]))
                    }
                    return try client.readResponse(timeout: .seconds(20))
                }
                #expect(ContinuousClock.now - started >= .seconds(3))
                #expect(answer.hasPrefix("HTTP/1.1 200") && answer.contains(#""status":"ready""#), "\(answer.prefix(300))")
            }
            await service.stop()
        }

        @Test func aLongNDJSONBatchIsNotCutByTheIdleTimeout() async throws {
            let scratch = Scratch()
            let service = try await RunningServer.start(scratch) {
                $0.connections.idleTimeout = .milliseconds(500)
                $0.pipeline.timeout.request = .seconds(30)
                $0.pipeline.timeout.stall = .seconds(30)
            }
            try await withMediaServer { media in
                // The silent origin answers nothing: the batch runs to its 3-s deadline, with one
                // line early (the photo) and then six idle timeouts in which the stream sends nothing.
                let body = #"{"urls": ["\#(media.baseURL)/media/photo.jpg", "\#(media.baseURL)/fault/silent"], "deadlineMs": 3000}"#
                let port = service.port
                let started = ContinuousClock.now
                let streamed = try await offPool {
                    let client = try RawClient(port: port)
                    defer { client.close() }
                    try client.send("POST /v1/attachments HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/x-ndjson\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                    return client.readUntil(#""done":true"#, timeout: .seconds(30))
                }
                let elapsed = ContinuousClock.now - started
                #expect(streamed.contains(#""done":true"#), "the stream reached its summary: \(streamed.suffix(300))")
                #expect(streamed.contains(#""reason":{"code":"deadlineExceeded""#) || streamed.contains("deadlineExceeded"))
                #expect(elapsed >= .milliseconds(2_900), "the batch ran its 3 s (\(elapsed))")
            }
            await service.stop()
        }

        private func openDescriptors() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
        }
    }
}

/// One blocking client socket on 127.0.0.1.
final class RawClient: Sendable {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0, LoopbackSockets.connect(fd, port: port) else {
            if fd >= 0 { Glibc.close(fd) }
            throw RawClients.Failure("connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
    }

    func close() { Glibc.close(fd) }

    func send(_ text: String) throws { try send(bytes: Array(text.utf8)) }

    func send(bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw RawClients.Failure("send: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    /// Reads until the peer closes (or resets), or `timeout` passes.
    func readUntilClosed(timeout: Duration) -> (bytes: [UInt8], closed: Bool) {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while true {
            switch readSome(until: deadline) {
            case .data(let more): bytes += more
            case .closed: return (bytes, true)
            case .timedOut: return (bytes, false)
            }
        }
    }

    /// Reads until `marker` has arrived, the peer closes, or `timeout` passes.
    func readUntil(_ marker: String, timeout: Duration) -> String {
        var text = ""
        let deadline = ContinuousClock.now + timeout
        while !text.contains(marker), case .data(let more) = readSome(until: deadline) {
            text += String(decoding: more, as: UTF8.self)
        }
        return text
    }

    /// One response with a Content-Length: its head and body, as text.
    func readResponse(timeout: Duration) throws -> String {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while true {
            let text = String(decoding: bytes, as: UTF8.self)
            if let headEnd = text.range(of: "\r\n\r\n") {
                let head = text[..<headEnd.lowerBound].lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.count - text.utf8.distance(from: text.startIndex, to: headEnd.upperBound) >= length { return text }
            }
            guard case .data(let more) = readSome(until: deadline) else {
                throw RawClients.Failure("the response did not arrive whole: \(text.prefix(200))")
            }
            bytes += more
        }
    }

    func exchange(_ request: String) throws -> String {
        try send(request)
        return try readResponse(timeout: .seconds(10))
    }

    enum Read { case data([UInt8]), closed, timedOut }

    func readSome(until deadline: ContinuousClock.Instant) -> Read {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let left = deadline - .now
            guard left > .zero else { return .timedOut }
            let ready = poll(&poller, 1, Int32(max(1, left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000)))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return ready == 0 ? .timedOut : .closed }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = recv(fd, &buffer, buffer.count, 0)
            return count > 0 ? .data(Array(buffer[..<count])) : .closed
        }
    }
}

/// Many hostile clients at once.
enum RawClients {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    struct Outcome: Sendable {
        /// For each client, how long after its bytes were sent the service closed it (nil: never).
        var closedAfter: [Duration?]
        /// What each received before the close.
        var received: [[UInt8]]
    }

    /// Opens `count` connections (in rounds of 100, each taken from the listen backlog by the
    /// service before the next, so the backlog is never the limit), sends `send` on each and
    /// then nothing, and waits for the service to close them.
    static func attack(port: Int, count: Int, send: String, waitAtMost: Duration) throws -> Outcome {
        var clients: [RawClient] = []
        var sentAt: [ContinuousClock.Instant] = []
        defer { clients.forEach { $0.close() } }
        for index in 0..<count {
            let client = try RawClient(port: port)
            try client.send(send)
            clients.append(client)
            sentAt.append(.now)
            if index % 100 == 99 { try waitUntilAccepted(port: port) }
        }
        var outcome = Outcome(closedAfter: Array(repeating: nil, count: count), received: Array(repeating: [], count: count))
        var open = Set(0..<count)
        let deadline = ContinuousClock.now + waitAtMost
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !open.isEmpty, ContinuousClock.now < deadline {
            let indices = Array(open)
            var pollers = indices.map { pollfd(fd: clients[$0].fd, events: Int16(POLLIN), revents: 0) }
            guard poll(&pollers, nfds_t(pollers.count), 100) >= 0 || errno == EINTR else { throw Failure("poll failed") }
            for (slot, index) in indices.enumerated() where pollers[slot].revents != 0 {
                let read = recv(clients[index].fd, &buffer, buffer.count, 0)
                if read > 0 {
                    outcome.received[index] += buffer[..<read]
                } else {
                    outcome.closedAfter[index] = ContinuousClock.now - sentAt[index]
                    open.remove(index)
                }
            }
        }
        return outcome
    }

    /// Waits until the service has accepted every connection waiting in its listen backlog.
    static func waitUntilAccepted(port: Int) throws {
        let accepted = try pollUntil(timeout: .seconds(10)) {
            guard let waiting = acceptQueue(port: port) else { throw Failure("no socket listens on port \(port)") }
            return waiting == 0
        }
        guard accepted else { throw Failure("\(acceptQueue(port: port) ?? 0) connections still unaccepted after 10 s") }
    }

    /// Connections in the accept queue of the socket listening on `port`: a listening socket's
    /// rx_queue in /proc/net/tcp (or tcp6). Nil when no socket listens there.
    static func acceptQueue(port: Int) -> Int? {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                // sl local_address rem_address st tx_queue:rx_queue ...; st 0A is LISTEN.
                let fields = line.split(separator: " ")
                guard fields.count > 4, fields[3] == "0A", let local = fields[1].split(separator: ":").last,
                      Int(local, radix: 16) == port, let queue = fields[4].split(separator: ":").last else { continue }
                return Int(queue, radix: 16)
            }
        }
        return nil
    }
}
