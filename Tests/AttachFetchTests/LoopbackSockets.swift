import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The IPv4 loopback socket calls the test servers (nginx's port, the CONNECT proxy) share:
/// 127.0.0.1 only, so nothing here can reach another address.
enum LoopbackSockets {
    /// Binds `fd` to 127.0.0.1 on a port the kernel picks; returns that port, or nil.
    static func bindEphemeral(_ fd: Int32) -> Int? {
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { return nil }
        let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return named == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// A port on 127.0.0.1 that was free a moment ago (bound, read and closed), for a child
    /// process that takes its port on the command line.
    static func freePort() throws -> Int {
        struct NoPort: Error {}
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        guard fd >= 0, let port = bindEphemeral(fd) else { throw NoPort() }
        return port
    }

    /// Connects `fd` to 127.0.0.1:`port`.
    static func connect(_ fd: Int32, port: Int) -> Bool {
        var address = loopback(port: UInt16(port))
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// Whether something on 127.0.0.1 accepts a connection on `port` now.
    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return connect(fd, port: port)
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return address
    }
}
