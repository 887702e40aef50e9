import AttachFetchCore
internal import CAttachFetchShims
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Messages on the worker's socket: a 4-byte little-endian length, then that many bytes (JobWire).
package enum Frame {
    /// A job or answer is small (paths, sizes, a message); anything larger is a broken peer.
    package static let maxBytes = 1 << 20

    package static func read(from fd: Int32) -> Data? {
        var descriptors: [Int32] = []
        defer { descriptors.forEach { close($0) } }
        return read(from: fd, descriptors: &descriptors)
    }

    /// A message that must arrive whole within `milliseconds` of this call: nil when the peer
    /// stops partway (a part sent and nothing more), hangs up, or sends a broken frame.
    package static func read(from fd: Int32, withinMilliseconds milliseconds: Int32) -> Data? {
        var descriptors: [Int32] = []
        defer { descriptors.forEach { close($0) } }
        let deadline = monotonicMilliseconds() + Int64(milliseconds)
        return read(from: fd, descriptors: &descriptors, until: deadline)
    }

    private static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// A message and the descriptors that came with it (SCM_RIGHTS), appended to `descriptors`.
    package static func read(from fd: Int32, descriptors: inout [Int32]) -> Data? {
        read(from: fd, descriptors: &descriptors, until: nil)
    }

    /// `until`: a `CLOCK_MONOTONIC` millisecond by which every byte must have come; nil: wait.
    private static func read(from fd: Int32, descriptors: inout [Int32], until deadline: Int64?) -> Data? {
        guard let header = readExactly(fd, 4, descriptors: &descriptors, until: deadline) else { return nil }
        let length = Int(header[0]) | Int(header[1]) << 8 | Int(header[2]) << 16 | Int(header[3]) << 24
        guard length <= maxBytes else { return nil }
        return readExactly(fd, length, descriptors: &descriptors, until: deadline).map { Data($0) }
    }

    /// Whether a message is ready to read on `fd` within `milliseconds` (or the peer hung up).
    package static func arrives(on fd: Int32, withinMilliseconds milliseconds: Int32) -> Bool {
        var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&waiting, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            return ready != 0
        }
    }

    /// Bounds how long a send on `fd` may block (`SO_SNDTIMEO`): past it, `write` fails as for a
    /// peer that went away. The keeper's sends to a worker that stopped reading end there, so a
    /// worker cannot hold a keeper's thread by filling its socket.
    @discardableResult
    package static func boundSends(on fd: Int32, milliseconds: Int) -> Bool {
        var wait = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size)) == 0
    }

    /// Sends a message; `descriptors` (at most AF_MAX_PASSED_DESCRIPTORS) go with its first
    /// byte as SCM_RIGHTS. Blocks while the peer's socket is full, up to `boundSends`' bound.
    package static func write(_ data: Data, to fd: Int32, descriptors: [Int32] = []) -> Bool {
        let length = data.count
        var bytes = [UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24 & 0xFF)]
        bytes.append(contentsOf: data)
        var offset = 0
        while offset < bytes.count {
            // MSG_NOSIGNAL: a peer that went away is an error here, not a SIGPIPE.
            let sent = bytes.withUnsafeBytes { buffer in
                offset == 0 ? af_send_with_descriptors(fd, buffer.baseAddress!, buffer.count, descriptors, Int32(descriptors.count))
                    : send(fd, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    private static func readExactly(_ fd: Int32, _ count: Int, descriptors: inout [Int32], until deadline: Int64?) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        var arrived = [Int32](repeating: -1, count: Int(AF_MAX_PASSED_DESCRIPTORS))
        while offset < count {
            if let deadline {
                let left = deadline - monotonicMilliseconds()
                guard left > 0, arrives(on: fd, withinMilliseconds: Int32(clamping: left)) else { return nil }
            }
            var arrivedCount: Int32 = 0
            let got = bytes.withUnsafeMutableBytes {
                af_receive_with_descriptors(fd, $0.baseAddress! + offset, count - offset, &arrived, &arrivedCount)
            }
            descriptors.append(contentsOf: arrived.prefix(Int(arrivedCount)))
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            offset += got
        }
        return bytes
    }
}
