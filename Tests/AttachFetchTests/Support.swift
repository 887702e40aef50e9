import CAttachFetchShims
import CTestSupport
import CVips
import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

/// The repository's TestMedia directory.
let testMediaDirectory: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("TestMedia").path

/// Starts a real HTTP server on 127.0.0.1 (ephemeral port) serving TestMedia, runs `body`, and
/// shuts the server down whatever happens.
func withMediaServer<T>(host: LoopbackHTTPServer.Host = .ipv4, directory: String = testMediaDirectory,
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

/// A fresh directory for one test's batches, removed afterwards.
final class Scratch {
    let path: String

    init() {
        var template = Array("/tmp/attach-fetch-test-XXXXXX".utf8CString)
        path = String(cString: mkdtemp(&template)!)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Every file below the directory, as paths relative to it, sorted.
    func tree() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: path)
        var all: [String] = []
        while let entry = enumerator?.nextObject() as? String { all.append(entry) }
        return all.sorted()
    }
}

/// A pipeline that may reach loopback (the tests' server), with its temp dir in `scratch`.
func makePipeline(_ scratch: Scratch, _ adjust: (inout AttachFetchConfiguration) -> Void = { _ in }) throws -> AttachmentPipeline {
    var configuration = AttachFetchConfiguration()
    configuration.allowPrivateNetwork = true
    configuration.temporaryDirectory = scratch.path
    adjust(&configuration)
    return try AttachmentPipeline(configuration: configuration)
}

/// One URL through a pipeline; returns its descriptor.
func fetchOne(_ url: String, _ pipeline: AttachmentPipeline, clip: ClippingRectangle? = nil,
              deadline: Duration? = nil) async -> AttachmentDescriptor {
    await pipeline.process([AttachmentRequest(url: url, clip: clip)], deadline: deadline).attachments[0]
}

/// Pixel size of an image file, read back with libvips.
func imageSize(_ path: String) -> (width: Int, height: Int)? {
    guard let image = af_vips_image_new_from_file(path, VIPS_FAIL_ON_NONE) else { return nil }
    defer { g_object_unref(UnsafeMutableRawPointer(image)) }
    return (Int(vips_image_get_width(image)), Int(vips_image_get_height(image)))
}

/// SHA-256 of a file by coreutils' sha256sum, an implementation independent of ours.
func sha256sum(_ path: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(String(decoding: data, as: UTF8.self).prefix(64))
}

func fileSize(_ path: String) -> Int64 {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? -1
}

func fileMode(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

/// Runs blocking work (a child process, a wait) on its own thread, so that it never holds one
/// of the few threads of Swift's cooperative pool that the timing tests depend on.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// Writes a black JPEG of the given size with libvips. Progressive JPEGs cannot be shrunk on
/// load, so decoding a large one is slow: the tool for testing thumbnail budgets. libvips must
/// already be started (make a pipeline first).
func writeBlackJPEG(path: String, width: Int, height: Int, progressive: Bool) throws {
    struct VipsFailed: Error {}
    guard af_test_write_black_jpeg(path, Int32(width), Int32(height), progressive ? 1 : 0) == 0 else { throw VipsFailed() }
}

/// Writes an uncompressed noise PNG (3 or 4 bands) or a quality-100 noise JPEG with an EXIF
/// orientation: images far over the limit that no encoder setting alone brings under it.
func writeNoiseImage(path: String, width: Int, height: Int, png bands: Int? = nil, jpegOrientation: Int = 1) throws {
    struct VipsFailed: Error {}
    let status = bands.map { af_test_write_noise_png(path, Int32(width), Int32(height), Int32($0)) }
        ?? af_test_write_noise_jpeg(path, Int32(width), Int32(height), Int32(jpegOrientation))
    guard status == 0 else { throw VipsFailed() }
}

/// A built executable of this package (they sit beside the test bundle).
func builtExecutable(_ name: String) -> String {
    var directory = Bundle.main.bundleURL
    while !FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path), directory.path != "/" {
        directory.deleteLastPathComponent()
    }
    return directory.appendingPathComponent(name).path
}

/// Runs a child process to the end and returns its exit status, its standard output, and its
/// own peak resident set in bytes (from wait4, so no other test's memory counts).
func runMeasuringPeakMemory(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String, peakBytes: Int) {
    struct SpawnFailed: Error { let code: Int32 }
    var pipe: [Int32] = [0, 0]
    guard Glibc.pipe(&pipe) == 0 else { throw SpawnFailed(code: errno) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
    posix_spawn_file_actions_addclose(&actions, pipe[0])
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    close(pipe[1])
    guard spawned == 0 else { close(pipe[0]); throw SpawnFailed(code: spawned) }
    var output = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(pipe[0], &buffer, buffer.count)
        if count <= 0 { break }
        output += buffer[..<count]
    }
    close(pipe[0])
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
    // WEXITSTATUS / WTERMSIG are macros: exit code in bits 8-15, signal in bits 0-6.
    let exit = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return (exit, String(decoding: output, as: UTF8.self), usage.ru_maxrss * 1024)
}
