import AttachFetchDevice
import EncryptedContent
import Foundation
import LoopbackHTTPServer
import Testing

/// Random bytes, from the kernel (a byte at a time would take seconds for the 16 MiB records).
func randomBytes(_ count: Int) -> [UInt8] {
    guard count > 0, let source = FileHandle(forReadingAtPath: "/dev/urandom") else { return [] }
    defer { try? source.close() }
    var bytes: [UInt8] = []
    while bytes.count < count { bytes += source.readData(ofLength: count - bytes.count) }
    return bytes
}

/// Runs CPU-heavy work (megabytes to encrypt or decode) on a thread of its own: on the
/// cooperative pool, two threads on two cores, it would hold up every other test's tasks for
/// seconds, and the tests that time a deadline with them.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// A random content key.
func randomKey() -> ContentKey { ContentKey(bytes: randomBytes(16))! }

/// `plaintext` as the publisher writes it: a header, then full records and a last one.
func encrypt(_ plaintext: [UInt8], key: ContentKey, salt: [UInt8] = randomBytes(16), recordSize: Int,
             keyID: [UInt8]? = nil) throws -> [UInt8] {
    var encoder = try ContentEncoder(key: key, salt: salt, recordSize: recordSize, keyID: keyID)
    var stream = encoder.header
    var offset = 0
    repeat {
        let end = min(offset + encoder.plaintextPerRecord, plaintext.count)
        stream += try encoder.seal(plaintext[offset..<end], last: end == plaintext.count)
        offset = end
    } while offset < plaintext.count
    return stream
}

/// A header with any record size (an encoder refuses the ones tests need that it would not
/// write): a random salt, `recordSize` as four bytes, then `keyID`.
func header(recordSize: UInt32, keyID: [UInt8]) -> [UInt8] {
    randomBytes(16) + withUnsafeBytes(of: recordSize.bigEndian) { Array($0) } + [UInt8(keyID.count)] + keyID
}

/// Lower-case hex SHA-256.
func sha256(_ bytes: [UInt8]) -> String {
    var hasher = SHA256Hasher()
    hasher.update(bytes)
    return hasher.hex
}

/// What the decoder makes of `stream` fed in chunks of `chunk` bytes, with the most it held
/// between chunks.
func decode(_ stream: [UInt8], key: ContentKey, chunk: Int, maxRecordSize: Int = AES128GCM.maxRecordSize)
    -> (result: Result<[UInt8], ContentEncryptionError>, mostHeld: Int) {
    var decoder = ContentDecoder(key: key, maxRecordSize: maxRecordSize)
    var plaintext: [UInt8] = []
    var mostHeld = 0
    do {
        var offset = 0
        while offset < stream.count {
            try decoder.feed(stream[offset..<min(offset + chunk, stream.count)]) { plaintext += $0 }
            mostHeld = max(mostHeld, decoder.bufferedByteCount)
            offset += chunk
        }
        try decoder.finish { plaintext += $0 }
        return (.success(plaintext), mostHeld)
    } catch let error as ContentEncryptionError {
        return (.failure(error), mostHeld)
    } catch {
        return (.failure(ContentEncryptionError(.malformed, "not a ContentEncryptionError: \(error)")), mostHeld)
    }
}

/// The `userInfo` the service's rewrite sends: `aps` and the `attach-fetch` block.
func notification(_ entries: [[String: Any]]) -> [AnyHashable: Any] {
    ["aps": ["alert": ["title": "Sale"], "mutable-content": 1], "attach-fetch": ["v": 1, "attachments": entries]]
}

/// One entry of the `attach-fetch` block.
func entry(_ id: String, url: String, key: ContentKey, plaintext: [UInt8], bytes: Int? = nil) -> [String: Any] {
    ["id": id, "url": url, "key": key.base64URL, "sha256": sha256(plaintext), "bytes": bytes ?? plaintext.count, "ext": "bin"]
}

/// A real HTTP/1.1 server on 127.0.0.1 for `handler`, shut down after `body` whatever happens.
func withServer<T>(_ handler: @escaping LoopbackHTTPServer.Handler,
                   _ body: (LoopbackHTTPServer) async throws -> T) async throws -> T {
    let server = try LoopbackHTTPServer(host: .ipv4, handler: handler)
    // Shutting down waits for the handler threads: off the cooperative pool.
    func shutdown() async { await withCheckedContinuation { done in Thread { server.shutdown(); done.resume() }.start() } }
    do {
        let result = try await body(server)
        await shutdown()
        return result
    } catch {
        await shutdown()
        throw error
    }
}

/// Serves `objects` by path with a Content-Length: the range asked for (206), else whole.
func serve(_ objects: [String: [UInt8]]) -> LoopbackHTTPServer.Handler {
    { request, connection in
        guard let object = objects[request.path] else {
            return connection.respond(status: 404, reason: "Not Found", body: [])
        }
        guard let range = request.byteRange(ofLength: object.count) else {
            return connection.respond(status: 200, contentType: "application/octet-stream", body: object)
        }
        connection.respond(status: 206, reason: "Partial Content", contentType: "application/octet-stream", body: Array(object[range]),
                           extraHeaders: [("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(object.count)")])
    }
}

/// Sends `head`, then `body` over and over, as an object of `total` bytes, until the client
/// hangs up, counting what it sent under `tag` (a small send buffer keeps the count close to
/// what the client took). A request for a range from 0 gets that range (206), as a server
/// that honours ranges sends it; with `ignoringRange`, or without a range, the whole object.
func stream(_ head: [UInt8], then body: [UInt8], total: Int, tag: String, ignoringRange: Bool = false,
            on connection: HTTPConnection, request: HTTPRequest) {
    connection.useSmallSendBuffer()
    var end = total
    if !ignoringRange, let range = request.byteRange(ofLength: total) {
        // The object's first bytes are all these tests' clients ever ask for.
        guard range.lowerBound == 0 else { return connection.respond(status: 416, reason: "Range Not Satisfiable", body: []) }
        end = range.upperBound
        guard connection.sendHead(status: 206, reason: "Partial Content", contentType: "application/octet-stream", contentLength: end,
                                  extraHeaders: [("Content-Range", "bytes 0-\(end - 1)/\(total)")]) else { return }
    } else {
        guard connection.sendHead(status: 200, contentType: "application/octet-stream", contentLength: total) else { return }
    }
    guard connection.send(head) else { return }
    var sent = head.count
    connection.serverForCounting.count(tag, head.count)
    while sent < end {
        let count = min(body.count, end - sent)
        guard body.withUnsafeBytes({ connection.send(UnsafeRawBufferPointer(rebasing: $0[..<count])) }) else { break }
        sent += count
        connection.serverForCounting.count(tag, count)
    }
    connection.mustClose = true
}

/// What `device-fetch-check` reports: one result per attachment, the time the fetch took and
/// how much its process's peak memory grew.
struct ProbeReport {
    struct Item { var ok: Bool; var code: String?; var message: String?; var bytes: Int? }
    var warmUp: [Bool]
    var results: [Item]
    var elapsedMs: Int
    var growthBytes: Int
    /// Bytes the session left in its temporary directory: FoundationNetworking does not remove
    /// a cancelled download task's partial file.
    var leftoverBytes: Int
}

/// Runs the fetcher in a process of its own (`device-fetch-check`): first `warmUp`, then
/// `userInfo` under a deadline `seconds` away, measuring the peak memory the second one adds.
func probe(warmUp: [AnyHashable: Any], _ userInfo: [AnyHashable: Any], seconds: Double) async throws -> ProbeReport {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("device-fetch-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    func json(_ object: [AnyHashable: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }
    // The session's own temporary files go to a directory of the probe's, so that what a
    // cancelled task leaves is counted and removed.
    let sessionFiles = directory.appendingPathComponent("session")
    try FileManager.default.createDirectory(at: sessionFiles, withIntermediateDirectories: true)
    let (status, output) = try await runProbe([directory.path, "\(seconds)", try json(warmUp), try json(userInfo)],
                                              environment: ["TMPDIR": sessionFiles.path + "/"])
    let leftover = try FileManager.default.contentsOfDirectory(atPath: sessionFiles.path).reduce(0) { sum, name in
        sum + ((try? FileManager.default.attributesOfItem(atPath: sessionFiles.appendingPathComponent(name).path)[.size] as? Int) ?? 0)
    }
    guard status == 0, let object = try? JSONSerialization.jsonObject(with: output) as? [String: Any],
          let results = object["results"] as? [[String: Any]], let warmUp = object["warmUp"] as? [Bool],
          let elapsed = object["elapsedMs"] as? Int, let growth = object["growthBytes"] as? Int else {
        throw ProbeFailed(description: "device-fetch-check exited \(status): \(String(decoding: output, as: UTF8.self))")
    }
    return ProbeReport(warmUp: warmUp, results: results.map {
        .init(ok: $0["ok"] as? Bool ?? false, code: $0["code"] as? String, message: $0["message"] as? String, bytes: $0["bytes"] as? Int)
    }, elapsedMs: elapsed, growthBytes: growth, leftoverBytes: leftover)
}

/// What `device-fetch-check --decode` reports: the plaintext's size and hash, and how much the
/// decoder alone grew its process's peak memory.
func probeDecoder(file: String, key: ContentKey) async throws -> (bytes: Int, sha256: String, growthBytes: Int) {
    let (status, output) = try await runProbe(["--decode", file, key.base64URL])
    guard status == 0, let object = try? JSONSerialization.jsonObject(with: output) as? [String: Any],
          let bytes = object["bytes"] as? Int, let hash = object["sha256"] as? String, let growth = object["growthBytes"] as? Int else {
        throw ProbeFailed(description: "device-fetch-check --decode exited \(status): \(String(decoding: output, as: UTF8.self))")
    }
    return (bytes, hash, growth)
}

struct ProbeFailed: Error, CustomStringConvertible { var description: String }

/// Runs `executable` (a program of this package) with `arguments` to its end: its exit status
/// and standard output.
func runProbe(_ arguments: [String], executable: String = "device-fetch-check", environment: [String: String] = [:]) async throws -> (Int32, Data) {
    try await runProgram(URL(fileURLWithPath: builtExecutable(executable)), arguments, environment: environment)
}

/// Runs the program at `executable` with `arguments` to its end, in `directory` when given: its
/// exit status and standard output (with standard error too, `withErrors`).
func runProgram(_ executable: URL, _ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:],
                withErrors: Bool = false) async throws -> (Int32, Data) {
    try await withCheckedThrowingContinuation { (done: CheckedContinuation<(Int32, Data), any Error>) in
        // A thread of its own: a program runs for seconds, and waiting must not hold a pool thread.
        Thread {
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            if let directory { process.currentDirectoryURL = directory }
            let pipe = Pipe()
            process.standardOutput = pipe
            if withErrors { process.standardError = pipe }
            do { try process.run() } catch { return done.resume(throwing: error) }
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            done.resume(returning: (process.terminationStatus, output))
        }.start()
    }
}

/// An executable built beside the test bundle.
func builtExecutable(_ name: String) -> String {
    var directory = Bundle.main.bundleURL
    while !FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path), directory.path != "/" {
        directory.deleteLastPathComponent()
    }
    return directory.appendingPathComponent(name).path
}

/// A fresh directory for decrypted files, removed by the caller.
func scratchDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("device-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}
