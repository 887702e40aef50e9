import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on 127.0.0.1 in front of a loopback server (the object store) that passes every
/// byte unchanged, so that signatures over the `Host` header still hold, but keeps back the
/// answer to each request whose first bytes are `heldRequest` for `hold`: the server has done
/// what was asked, and the client does not know it yet (an interim `100 Continue` is not held,
/// so that the body reaches the server). Stopped by `shutdown()`.
final class AnswerHoldingRelay: @unchecked Sendable {
    // @unchecked Sendable: `matched` is only touched under `lock`; the rest is set in init.
    private var acceptor: LoopbackAcceptor!
    private let upstreamPort: Int
    private let heldRequest: [UInt8]
    private let hold: Duration
    private let lock = NSLock()
    private var matched = 0

    var url: String { "http://127.0.0.1:\(acceptor.port)" }
    /// Requests that began with `heldRequest` so far.
    var heldRequests: Int { lock.withLock { matched } }

    init(to upstreamPort: Int, holdingAnswersTo heldRequest: String, for hold: Duration) throws {
        self.upstreamPort = upstreamPort
        self.heldRequest = Array(heldRequest.utf8)
        self.hold = hold
        acceptor = try LoopbackAcceptor { client in self.serve(client) }
    }

    func shutdown() { acceptor.shutdown() }

    private func serve(_ client: Int32) {
        defer { close(client) }
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(upstream) }
        guard LoopbackSockets.connect(upstream, port: upstreamPort) else { return }
        // Requests on one connection come one after the other (libcurl does not pipeline), so
        // a request's first bytes arrive at the start of a read.
        var holdUntil: ContinuousClock.Instant?
        LoopbackSockets.relay(client, upstream) { side, chunk in
            if side == 0, chunk.prefix(heldRequest.count).elementsEqual(heldRequest) {
                lock.withLock { matched += 1 }
                holdUntil = .now + hold
            } else if side == 1, let until = holdUntil, !chunk.prefix(12).elementsEqual("HTTP/1.1 100".utf8) {
                // The client may give up meanwhile; what it is sent after is never read.
                let left = until - .now
                if left > .zero { Thread.sleep(forTimeInterval: left / .seconds(1)) }
                holdUntil = nil
            }
        }
    }
}
