import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP CONNECT proxy on 127.0.0.1 for the proxy tests: it tunnels to loopback targets
/// only (anything else gets 403, so even a broken test cannot send traffic elsewhere) and
/// records every CONNECT target. Stopped by `shutdown()`.
final class ConnectProxy: @unchecked Sendable {
    // @unchecked Sendable: `targets` and `stopping` are only touched under `lock`; `listener`
    // is set in init and only closed in shutdown.
    private let listener: Int32
    let port: Int
    private let lock = NSLock()
    private var recorded: [String] = []
    private var stopping = false

    var url: String { "http://127.0.0.1:\(port)" }
    /// The `host:port` of each CONNECT received, in order.
    var targets: [String] { lock.withLock { recorded } }

    init() throws {
        struct ProxyFailed: Error {}
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ProxyFailed() }
        guard let bound = LoopbackSockets.bindEphemeral(fd), listen(fd, 64) == 0 else { close(fd); throw ProxyFailed() }
        listener = fd
        port = bound
        Thread { [self] in acceptLoop() }.start()
    }

    func shutdown() {
        lock.withLock { stopping = true }
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if lock.withLock({ stopping }) { return }
                continue
            }
            Thread { [self] in serve(client) }.start()
        }
    }

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
        relay(client, upstream)
    }

    private func reply(_ fd: Int32, _ status: String) {
        let text = Array("HTTP/1.1 \(status)\r\n\r\n".utf8)
        _ = text.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Copies bytes both ways until either side closes.
    private func relay(_ a: Int32, _ b: Int32) {
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while poll(&fds, 2, 10_000) > 0 {
            for (index, entry) in fds.enumerated() where entry.revents != 0 {
                let count = read(entry.fd, &buffer, buffer.count)
                if count <= 0 { return }
                let other = fds[1 - index].fd
                var sent = 0
                while sent < count {
                    let wrote = buffer.withUnsafeBytes { send(other, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                    if wrote <= 0 { return }
                    sent += wrote
                }
            }
        }
    }
}
