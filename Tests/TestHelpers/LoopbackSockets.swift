import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The IPv4 loopback socket calls the test servers (nginx's port, the CONNECT proxy) share:
/// 127.0.0.1 only, so nothing here can reach another address.
package enum LoopbackSockets {
    /// Binds `fd` to 127.0.0.1 on a port the kernel picks; returns that port, or nil.
    package static func bindEphemeral(_ fd: Int32) -> Int? {
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { return nil }
        let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return named == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// A port on 127.0.0.1 that was free a moment ago (bound, read and closed), for a child
    /// process that takes its port on the command line.
    package static func freePort() throws -> Int {
        struct NoPort: Error {}
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        guard fd >= 0, let port = bindEphemeral(fd) else { throw NoPort() }
        return port
    }

    /// Connects `fd` to 127.0.0.1:`port`.
    package static func connect(_ fd: Int32, port: Int) -> Bool {
        var address = loopback(port: UInt16(port))
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// Whether something on 127.0.0.1 accepts a connection on `port` now.
    package static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return connect(fd, port: port)
    }

    /// Copies bytes both ways between `a` and `b` until either side closes, or 10 s pass with
    /// nothing to copy. `beforeSending` sees each chunk before it is passed on, with 0 for one
    /// read from `a` and 1 for one read from `b`; it may block (to hold it back).
    package static func relay(_ a: Int32, _ b: Int32, beforeSending: (Int, ArraySlice<UInt8>) -> Void = { _, _ in }) {
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while poll(&fds, 2, 10_000) > 0 {
            for (index, entry) in fds.enumerated() where entry.revents != 0 {
                let count = read(entry.fd, &buffer, buffer.count)
                if count <= 0 { return }
                beforeSending(index, buffer[..<count])
                var sent = 0
                while sent < count {
                    let wrote = buffer.withUnsafeBytes { send(fds[1 - index].fd, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                    if wrote <= 0 { return }
                    sent += wrote
                }
            }
        }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return address
    }
}

/// A listening socket on 127.0.0.1 that hands each connection to `serve` on a thread of its
/// own (which closes it), until `shutdown()`: the accept loop of the tests' small servers.
package final class LoopbackAcceptor: @unchecked Sendable {
    // @unchecked Sendable: `stopping` is only touched under `lock`; `listener` is set in init
    // and only closed in shutdown.
    private let listener: Int32
    package let port: Int
    private let lock = NSLock()
    private var stopping = false

    package init(serve: @escaping @Sendable (Int32) -> Void) throws {
        struct ListenFailed: Error {}
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ListenFailed() }
        guard let bound = LoopbackSockets.bindEphemeral(fd), listen(fd, 64) == 0 else { close(fd); throw ListenFailed() }
        listener = fd
        port = bound
        Thread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 {
                    if lock.withLock({ stopping }) { return }
                    continue
                }
                Thread { serve(client) }.start()
            }
        }.start()
    }

    package func shutdown() {
        lock.withLock { stopping = true }
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
