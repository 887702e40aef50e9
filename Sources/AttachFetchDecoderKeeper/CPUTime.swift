#if canImport(Glibc)
import Glibc
#endif

/// A process's CPU time (user and system, all its threads), read from `/proc/PID/stat`: opened
/// once, at the first reading, and read again from its start each time (procfs makes the text
/// anew on every read), so a reading costs one `pread`, not three calls.
struct CPUTime {
    static let ticksPerSecond = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))
    let pid: pid_t
    private var fd: Int32 = -1

    init(pid: pid_t) { self.pid = pid }

    /// Read into once per reading; no other allocation (the keeper reads every 100 ms of a job).
    private var buffer = [UInt8](repeating: 0, count: 1024)

    mutating func seconds() -> Double? {
        if fd < 0 { fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        let descriptor = fd
        let ticks = buffer.withUnsafeMutableBytes { bytes -> Int? in
            let count = pread(descriptor, bytes.baseAddress, bytes.count, 0)
            guard count > 0 else { return nil }
            // The command name, in parentheses, may hold spaces: the fields after its last
            // ')' start with the state (field 3); utime and stime are fields 14 and 15.
            var index = count - 1
            while index >= 0 && bytes[index] != UInt8(ascii: ")") { index -= 1 }
            guard index >= 0 else { return nil }
            var field = 2, user = 0, system = 0
            index += 1
            while index < count {
                let byte = bytes[index]
                if byte == UInt8(ascii: " ") {
                    if field == 15 { return user + system }
                    field += 1
                } else if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                    let digit = Int(byte - UInt8(ascii: "0"))
                    if field == 14 { user = user * 10 + digit } else if field == 15 { system = system * 10 + digit }
                }
                index += 1
            }
            return nil
        }
        return ticks.map { Double($0) / Self.ticksPerSecond }
    }

    mutating func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }
}
