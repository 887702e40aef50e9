import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP CONNECT proxy on 127.0.0.1 for the proxy tests: it tunnels to loopback targets
/// only (anything else gets 403, so even a broken test cannot send traffic elsewhere) and
/// records every CONNECT target. Stopped by `shutdown()`.
final class ConnectProxy: @unchecked Sendable {
    // @unchecked Sendable: `recorded` is only touched under `lock`; `acceptor` is set in init.
    private var acceptor: LoopbackAcceptor!
    private let lock = NSLock()
    private var recorded: [String] = []

    var port: Int { acceptor.port }
    var url: String { "http://127.0.0.1:\(port)" }
    /// The `host:port` of each CONNECT received, in order.
    var targets: [String] { lock.withLock { recorded } }

    init() throws {
        acceptor = try LoopbackAcceptor { client in self.serve(client) }
    }

    func shutdown() { acceptor.shutdown() }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var head = [UInt8]()
        var byte: UInt8 = 0
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) && head.count < 8192 {
            guard read(client, &byte, 1) == 1 else { return }
            head.append(byte)
        }
        let requestLine = String(decoding: head, as: UTF8.self).split(separator: "\r\n").first.map(String.init) ?? ""
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[0] == "CONNECT" else { return reply(client, "405 Method Not Allowed") }
        let target = String(parts[1])
        lock.withLock { recorded.append(target) }
        guard let colon = target.lastIndex(of: ":"), let targetPort = UInt16(target[target.index(after: colon)...]),
              target[..<colon] == "127.0.0.1" else { return reply(client, "403 Forbidden") }
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(upstream) }
        let connected = LoopbackSockets.connect(upstream, port: Int(targetPort))
        guard connected else { return reply(client, "502 Bad Gateway") }
        reply(client, "200 Connection Established")
        LoopbackSockets.relay(client, upstream)
    }

    private func reply(_ fd: Int32, _ status: String) {
        let text = Array("HTTP/1.1 \(status)\r\n\r\n".utf8)
        _ = text.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

}
