import AttachFetchCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The decoder worker: a process that runs decode jobs for an `AttachmentPipeline`, one at a
/// time, read from standard input and answered on standard output (a socket the pipeline
/// holds). What runs inside it is in AttachFetchMedia (`DecoderWorkerProgram`); what
/// starts, feeds and ends it is in AttachFetchDecoderKeeper. This is what the two share.
public enum DecoderWorker {
    /// Limits a worker applies to itself, passed on its command line.
    package struct Limits: Equatable {
        package var memoryBytes: Int
        /// The worker's CPU time in all its life (`RLIMIT_CPU`'s soft limit; the hard limit is
        /// `cpuGraceSeconds` more, and a worker cannot raise either): a backstop; each job is
        /// held to its own share by the keeper, which ends the worker past it (`DecoderProcess`).
        package var cpuSeconds: Int
        /// The seconds between `RLIMIT_CPU`'s soft limit and its hard one. At the soft limit the
        /// kernel sends SIGXCPU, which names the limit when the worker dies of it; at the hard
        /// one, SIGKILL, which would not (with the two alike, the kernel sends SIGKILL alone).
        package static let cpuGraceSeconds = 5
        package var fileSizeBytes: Int
        /// The descriptors a worker may hold (`RLIMIT_NOFILE`, soft and hard): its socket,
        /// /dev/null, a job's few files and what a library opens while it loads, with room to
        /// spare (docs/security.md#decoders-in-worker-processes has the most measured). As it
        /// makes no file by name (Landlock), this bounds the disk a worker fills: this many
        /// files of `fileSizeBytes` at most.
        package static let openFiles = 64
        package var parent: pid_t
        /// The one directory the worker may write and read beside system files (Landlock): the
        /// pipeline's temporary directory, where every job's files are; nil: no such rule.
        package var workDirectory: String?

        package var arguments: [String] {
            ["--protocol", "\(DecoderWorker.protocolVersion)", "--memory", "\(memoryBytes)", "--cpu", "\(cpuSeconds)", "--file-size", "\(fileSizeBytes)", "--parent", "\(parent)"]
                // Hex, so that a path with spaces survives the handshake's split.
                + (workDirectory.map { ["--work-directory", TextFormat.hex($0.utf8)] } ?? [])
        }

        /// The same, as the first message to a worker forked by the fork server (`DecoderReserve`).
        package var handshake: Data { Data(arguments.joined(separator: " ").utf8) }

        package init?(handshake: Data) {
            self.init(arguments: String(decoding: handshake, as: UTF8.self).split(separator: " ").map(String.init))
        }

        package init(memoryBytes: Int, cpuSeconds: Int, fileSizeBytes: Int, parent: pid_t, workDirectory: String? = nil) {
            self.memoryBytes = memoryBytes
            self.cpuSeconds = cpuSeconds
            self.fileSizeBytes = fileSizeBytes
            self.parent = parent
            self.workDirectory = workDirectory
        }

        package init?(arguments: [String]) {
            var values: [String: Int] = [:]
            var workDirectory: String?
            var index = 0
            while index + 1 < arguments.count {
                if arguments[index] == "--work-directory" {
                    let hex = Array(arguments[index + 1].utf8)
                    guard hex.count % 2 == 0 else { return nil }
                    let bytes = stride(from: 0, to: hex.count, by: 2).compactMap { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16) }
                    guard bytes.count * 2 == hex.count else { return nil }
                    workDirectory = String(decoding: bytes, as: UTF8.self)
                } else {
                    guard let value = Int(arguments[index + 1]) else { return nil }
                    values[arguments[index]] = value
                }
                index += 2
            }
            guard index == arguments.count, values["--protocol"] == DecoderWorker.protocolVersion, let memory = values["--memory"], let cpu = values["--cpu"],
                  let fileSize = values["--file-size"], let parent = values["--parent"] else { return nil }
            self.init(memoryBytes: memory, cpuSeconds: cpu, fileSizeBytes: fileSize, parent: pid_t(parent), workDirectory: workDirectory)
        }
    }

    /// A worker's whole environment: the keeper starts every worker with this and nothing else,
    /// so that no variable of the program's (credentials among them) reaches a decoder.
    /// SWIFT_BACKTRACE=enable=no: the Swift runtime's crash handler would try to start its
    /// backtracer (an exec the seccomp filter refuses) and, for a signal sent from outside,
    /// return and carry on; a worker that faults must simply die, for the pipeline to see.
    /// VIPSHOME=/dev/null: libvips maps none of its optional modules at start (the HEIF one
    /// is loaded when first needed), which halves a worker's start.
    package static let environment: [(name: String, value: String)] = [
        ("LC_ALL", "C"), ("SWIFT_BACKTRACE", "enable=no"), ("VIPSHOME", "/dev/null"),
    ]

    /// The version of what the pipeline and its worker say to each other (the start arguments,
    /// the handshake, `JobWire`): a worker refuses limits of another version and exits with
    /// `otherVersionStatus`. Raised whenever any of them changes, so that a decoder executable
    /// replaced under a running program (a package update) is told apart from a crash.
    package static let protocolVersion = 4

    /// A worker's exit status when it was started by a pipeline of another protocol version,
    /// or with arguments it cannot read (an older executable knows no version): never the
    /// media's fault.
    package static let otherVersionStatus: Int32 = 2

    /// The argument that makes a started worker the fork server (`DecoderReserve`): it forks a
    /// worker for each request on its socket and never runs a job itself.
    package static let forkServerArgument = "--fork-server"

    /// A worker's first message when the fork server made it: its pid (the pipeline did not
    /// start it, so it cannot know it otherwise), 4 bytes little-endian. The pipeline believes
    /// it only for a live child of its own (`waitpid`), and the worker sends it before it has
    /// read anything but what the fork server loaded.
    package struct ForkedHello: Equatable {
        package var pid: pid_t

        package init(pid: pid_t) { self.pid = pid }

        package init?(_ data: Data) {
            guard data.count == 4 else { return nil }
            let bytes = Array(data)
            pid = pid_t(bitPattern: UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24)
            guard pid > 0 else { return nil }
        }

        package var encoded: Data {
            let value = UInt32(bitPattern: pid)
            return Data([UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24 & 0xFF)])
        }
    }

    /// What a worker says once it has confined itself, before it reads any job: the Landlock
    /// ABI its ruleset was made with (0: none). The keeper believes only this of it: the
    /// filter, `NoNewPrivs` and the limits it reads from `/proc` itself (`ConfinementCheck`),
    /// and it gives the worker no job until both agree with what it requires. 5 bytes: 0xC0,
    /// then the ABI, 4 bytes little-endian.
    package struct ConfinementReport: Equatable {
        package var landlockABI: Int32

        package init(landlockABI: Int32) { self.landlockABI = landlockABI }

        package init?(_ data: Data) {
            let bytes = Array(data)
            guard bytes.count == 5, bytes[0] == 0xC0 else { return nil }
            landlockABI = Int32(bitPattern: UInt32(bytes[1]) | UInt32(bytes[2]) << 8 | UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 24)
            guard landlockABI >= 0 else { return nil }
        }

        package var encoded: Data {
            let value = UInt32(bitPattern: landlockABI)
            return Data([0xC0, UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24 & 0xFF)])
        }
    }

    /// A worker's exit status after a system call its filter traps (`ForbiddenCall`).
    package static let forbiddenCallStatus: Int32 = 31

    /// What a worker's SIGSYS handler sends before it exits with `forbiddenCallStatus`: the
    /// number of the call that was not on its allow-list (`SystemCallAllowList`). The keeper
    /// names the call from its own table; the number is the worker's word, and only words the
    /// failure's message. 5 bytes: 0xC5, then the number, 4 bytes little-endian.
    package struct ForbiddenCall: Equatable, CustomStringConvertible {
        package var number: UInt32

        package init(number: UInt32) { self.number = number }

        package init?(_ data: Data) {
            let bytes = Array(data)
            guard bytes.count == 5, bytes[0] == 0xC5 else { return nil }
            number = UInt32(bytes[1]) | UInt32(bytes[2]) << 8 | UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 24
        }

        /// "name (number)", or the number alone when the table lacks it.
        package var description: String { SystemCallNames.name(number).map { "\($0) (\(number))" } ?? "number \(number)" }
    }
}
