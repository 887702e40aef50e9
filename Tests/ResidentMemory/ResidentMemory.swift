import Foundation

/// This process's resident memory, from /proc/self/status (Linux), for the tests and the check
/// programs that measure a process's own memory.
public enum ResidentMemory {
    public struct Unreadable: Error {}

    /// Resets the peak (VmHWM) to the current size (Linux's clear_refs), and returns the
    /// current size in bytes.
    public static func resetPeak() throws -> Int {
        try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        return try current()
    }

    /// The peak resident size since the last reset, in bytes.
    public static func peak() throws -> Int { try field("VmHWM") }

    /// The resident size now, in bytes.
    public static func current() throws -> Int { try field("VmRSS") }

    private static func field(_ name: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") else { throw Unreadable() }
        return kilobytes * 1024
    }
}
