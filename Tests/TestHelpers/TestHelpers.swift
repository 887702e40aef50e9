import Foundation
import LoopbackHTTPServer
import Testing

/// A fresh directory for one test's files, removed afterwards.
public final class Scratch: Sendable {
    public let path: String

    /// In TMPDIR (or /tmp): `scripts/test.sh` points it at a directory of the run's.
    public init() {
        var template = Array((FileManager.default.temporaryDirectory.path + "/attach-fetch-test-XXXXXX").utf8CString)
        path = String(cString: mkdtemp(&template)!)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Every file below the directory, as paths relative to it, sorted. A pipeline's workers'
    /// directory (`.attach-fetch-workers-XXXXXX`, which lives as long as the pipeline) is seen
    /// through: what is in it is listed as if it were at the top, so that "nothing is left" is
    /// about the work, not the pipeline.
    public func tree() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: path)
        var all: [String] = []
        while let entry = enumerator?.nextObject() as? String {
            let parts = entry.split(separator: "/", maxSplits: 1)
            guard parts.first?.hasPrefix(Self.workersPrefix) == true else { all.append(entry); continue }
            if parts.count == 2 { all.append(String(parts[1])) }
        }
        return all.sorted()
    }

    /// The name a pipeline's workers' directory starts with.
    public static let workersPrefix = ".attach-fetch-workers-"
}

/// Runs blocking `work` on a thread of its own, off the cooperative pool, which it would
/// otherwise hold (2 threads on this machine).
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// The package's root directory.
public let packageRoot: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// `waitUntil` for code that cannot suspend (a child process's start, in an initializer): polls
/// `condition` every 10 ms. Returns whether it came true within `timeout`; the caller says what
/// failed, with what it knows.
public func pollUntil(timeout: Duration, _ condition: () throws -> Bool) rethrows -> Bool {
    let end = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < end else { return false }
        usleep(10_000)
    }
    return true
}

/// Polls `condition` every 10 ms until it holds: how a test waits for an event it can observe
/// (a metric, a count, a state). Records an issue after `timeout`, which only bounds a failure.
public func waitUntil(_ what: String = "the condition", timeout: Duration = .seconds(20),
                      _ condition: () throws -> Bool) async throws {
    let end = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < end else {
            Issue.record("\(what) did not come true within \(timeout)")
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// The repository's TestMedia directory.
public let testMediaDirectory: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("TestMedia").path

/// Starts a real HTTP server on 127.0.0.1 (ephemeral port) serving TestMedia, runs `body`, and
/// shuts the server down whatever happens.
public func withMediaServer<T>(host: LoopbackHTTPServer.Host = .ipv4, directory: String = testMediaDirectory,
                               _ body: (LoopbackHTTPServer) async throws -> T) async throws -> T {
    let routes = MediaRoutes(directory: directory)
    let server = try LoopbackHTTPServer(host: host) { request, connection in routes.handle(request, connection) }
    do {
        let result = try await body(server)
        try await offPool { server.shutdown() }
        return result
    } catch {
        try await offPool { server.shutdown() }
        throw error
    }
}

/// Runs a program of this package (built beside the test bundle) in `directory` to its end: its
/// exit status and what it wrote on either stream.
public func runBuiltProgram(_ name: String, _ arguments: [String], in directory: String) throws -> (status: Int32, output: String) {
    var bin = Bundle.main.bundleURL
    while !FileManager.default.fileExists(atPath: bin.appendingPathComponent(name).path), bin.path != "/" {
        bin.deleteLastPathComponent()
    }
    let process = Process()
    process.executableURL = bin.appendingPathComponent(name)
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, output)
}
