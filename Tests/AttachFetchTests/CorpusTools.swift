import Foundation
import LoopbackHTTPServer
import Synchronization
import Testing
@testable import AttachFetch

/// One `media-check` process (Tests/MediaCheck): what `vips avg`, `vipsheader -a` and `ffprobe`
/// answer, for one file at a time, without a process of each per file. A crash of the checker
/// fails the batch it was checking (`MediaCheckEnded`), where a crashed `ffprobe` would have
/// read as a file it does not read.
final class MediaChecker {
    struct Answer: Decodable {
        var ok: Bool
        var errors: String
        var loader: String?
        var width: Int?
        var height: Int?
        var orientation: Int?
        var format: String?
        var streams: [Stream]?
        var difference: Double?

        struct Stream: Decodable {
            var type: String
            var codec: String
        }
    }

    private let process = Process()
    private let requests = Pipe()
    private let answers = Pipe()
    private var pending = Data()

    init() throws {
        process.executableURL = URL(fileURLWithPath: builtExecutable("media-check"))
        process.standardInput = requests
        process.standardOutput = answers
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// `vips avg NAME`: whether every pixel decodes, and libvips' error text.
    func average(_ name: String) throws -> Answer { try ask("avg", name) }

    /// `vipsheader -a FILE`: its loader, size and orientation.
    func header(_ file: String) throws -> Answer { try ask("header", file) }

    /// What `ffprobe -show_entries format=format_name:stream=codec_type,codec_name FILE` reads:
    /// whether it succeeds, the container's name, and each stream's type and codec.
    func probe(_ file: String) throws -> Answer { try ask("probe", file) }

    /// How far `output` is from `source` as a phone shows each, rendered by libvips alone
    /// (Tests/MediaCheck/Render.swift): the mean absolute difference per pixel and band, 0-255.
    func difference(source: String, output: String) throws -> Answer { try ask("compare", "\(source)\t\(output)") }

    /// An image's size as displayed (EXIF orientations 5-8 swap the sides); -1 when unreadable.
    func displaySize(_ file: String) throws -> (width: Int, height: Int) {
        let answer = try header(file)
        let width = answer.width ?? -1, height = answer.height ?? -1
        return (5...8).contains(answer.orientation ?? 1) ? (height, width) : (width, height)
    }

    private func ask(_ operation: String, _ argument: String) throws -> Answer {
        try requests.fileHandleForWriting.write(contentsOf: Data("\(operation)\t\(argument)\n".utf8))
        while !pending.contains(0x0A) {
            let more = answers.fileHandleForReading.availableData
            guard !more.isEmpty else {
                // Its output ended: it has exited (or is exiting), and only then has a status.
                process.waitUntilExit()
                throw MediaCheckEnded(status: process.terminationStatus, request: "\(operation) \(argument)")
            }
            pending.append(more)
        }
        let end = pending.firstIndex(of: 0x0A)!
        defer { pending.removeSubrange(...end) }
        return try JSONDecoder().decode(Answer.self, from: pending[..<end])
    }

    struct MediaCheckEnded: Error { var status: Int32; var request: String }

    func close() {
        try? requests.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

/// Runs a tool and returns its exit status and standard output. libvips runs with one worker
/// thread: with more, `vips avg` of a damaged PNG sometimes exits 0 (an error in one tile is
/// lost between its threads), so its verdict would be luck.
func tool(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
    if path == "/usr/bin/ffmpeg", let made = try GeneratedMediaCache.ffmpeg(arguments) { return made }
    return try runTool(path, arguments)
}

/// `tool` without the kept media (`GeneratedMediaCache`).
func runTool(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(["VIPS_CONCURRENCY": "1"]) { $1 }
    let out = Pipe()
    let err = FileManager.default.temporaryDirectory.appendingPathComponent("attach-fetch-tool-\(UUID().uuidString)")
    try makeFile(err.path)
    defer { try? FileManager.default.removeItem(at: err) }
    process.standardOutput = out
    process.standardError = try FileHandle(forWritingTo: err)
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    // Read through a handle: String(contentsOf:) leaks its buffer on an empty file
    // (FoundationEssentials; LeakSanitizer found it).
    let errors = (try? FileHandle(forReadingFrom: err)).map { handle in
        defer { try? handle.close() }
        return String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
    } ?? ""
    return (process.terminationStatus, String(decoding: data, as: UTF8.self), errors)
}

/// `tool` from async code: on a thread of its own (`offPool`), never on one of the few threads
/// of the cooperative pool, which every other test's tasks, timers and deadlines share.
func tool(_ path: String, _ arguments: [String]) async throws -> (status: Int32, output: String, errors: String) {
    try await offPool { try tool(path, arguments) }
}

/// Runs a command to the end and returns its exit status, its standard output, and the peak
/// memory of its process tree (it and every descendant: its decoder workers), sampled every
/// 25 ms. Each process counts its proportional set size (PSS): pages the processes share (the
/// libraries' code) are counted once in the sum, not once per process as resident sizes would.
/// (Reading PSS walks the process's page tables: about 0.6 ms for a process with libvips and
/// FFmpeg mapped. Every 10 ms, the sampling cost a quarter of a core per batch.)
func runSampled(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String, peakBytes: Int) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let root = process.processIdentifier
    let peak = Atomic<Int>(0)
    let done = Atomic<Bool>(false)
    let sampler = Thread {
        while !done.load(ordering: .relaxed) {
            let total = processTree(root).reduce(0) { $0 + proportionalBytes($1) }
            if total > peak.load(ordering: .relaxed) { peak.store(total, ordering: .relaxed) }
            usleep(25_000)
        }
    }
    sampler.start()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    done.store(true, ordering: .relaxed)
    return (process.terminationStatus, String(decoding: data, as: UTF8.self), peak.load(ordering: .relaxed))
}

/// A process and all its descendants, from each thread's list of the children it started
/// (`/proc/PID/task/TID/children`): a few small reads, not a scan of every process.
func processTree(_ root: pid_t) -> [pid_t] {
    var tree: [pid_t] = [], pending = [root]
    while let pid = pending.popLast() {
        tree.append(pid)
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? ""
            pending += text.split(separator: " ").compactMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
    }
    return tree
}

func proportionalBytes(_ pid: pid_t) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8),
          let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Pss:") }) else { return 0 }
    return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0) * 1024
}
