import Foundation

/// What processes have, read from /proc: the test process's decoder workers, a process's open
/// files, and how far it has read one.
enum TestProcess {
    /// This process's decoder workers, by pid (their parent is this process).
    static func decoderWorkers() -> [pid_t] { living(named: "attach-fetch-de", parent: getpid()) }

    /// The processes not yet ended (zombies left out) whose command name (the kernel's, at
    /// most 15 bytes) is `name`, with `parent` as their parent when given.
    static func living(named name: String, parent: pid_t? = nil) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            let command = stat[stat.index(after: stat.firstIndex(of: "(")!)..<close]
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            return command == name && fields.count > 2 && fields[0] != "Z" && (parent == nil || pid_t(fields[1]) == parent)
        }
    }

    /// The files a process has open.
    static func openFiles(_ pid: pid_t) -> [String] { openDescriptors(pid).map(\.path) }

    /// A process's open descriptors (the numbers under /proc/PID/fd) and what each names.
    static func openDescriptors(_ pid: pid_t) -> [(number: String, path: String)] {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return descriptors.compactMap { number in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(number)")).map { (number, $0) }
        }
    }

    /// How far a process has read `path`: the offset of the first descriptor open on it, from
    /// /proc/PID/fdinfo; nil when it has none open.
    static func offset(of path: String, in pid: pid_t) throws -> Int? {
        guard let number = openDescriptors(pid).first(where: { $0.path == path })?.number else { return nil }
        return try String(contentsOfFile: "/proc/\(pid)/fdinfo/\(number)", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("pos:") }
            .flatMap { Int($0.dropFirst(4).trimmingCharacters(in: .whitespaces)) }
    }

    /// This process's living workers executed from `executable` (the path, as they were started).
    static func workers(startedFrom executable: String) -> [pid_t] {
        living(named: String(((executable as NSString).lastPathComponent).prefix(15)), parent: getpid()).filter { pid in
            let arguments = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data()
            return arguments.split(separator: 0).first.map { String(decoding: $0, as: UTF8.self) } == executable
        }
    }
}
