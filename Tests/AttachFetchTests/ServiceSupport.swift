import AttachFetch
@testable import AttachFetchService
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Testing


/// A real `AttachFetchServer` on 127.0.0.1:0, stopped (and its files removed) at the end.
final class RunningServer: Sendable {
    let server: AttachFetchServer
    let port: Int
    private let task: Task<Void, any Error>

    static func start(_ scratch: Scratch, logger: Logger = AttachmentPipeline.silentLogger,
                      _ adjust: (inout ServiceConfiguration) -> Void = { _ in }) async throws -> RunningServer {
        var pipeline = AttachFetchConfiguration()
        pipeline.allowPrivateNetwork = true // the media server is on loopback
        pipeline.temporaryDirectory = scratch.path
        var configuration = ServiceConfiguration(pipeline: pipeline)
        configuration.port = 0
        adjust(&configuration)
        let server = try AttachFetchServer(configuration: configuration, logger: logger)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task { try await server.run { continuation.yield($0) } }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        OpenAPIContract.servicePorts.withLock { _ = $0.insert(port) }
        return RunningServer(server: server, port: port, task: task)
    }

    private init(server: AttachFetchServer, port: Int, task: Task<Void, any Error>) {
        self.server = server
        self.port = port
        self.task = task
    }

    var base: String { "http://127.0.0.1:\(port)" }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

/// The value of the first Prometheus sample line starting with `prefix` (name and labels).
func metricValue(_ text: String, _ prefix: String) -> Double? {
    text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.split(separator: " ").last ?? "") }
}

/// One HTTP exchange through URLSession (libcurl underneath on Linux).
struct Exchange {
    var status: Int
    var headers: [String: String]
    var body: Data

    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }

    static func send(_ method: String, _ url: String, body: Data? = nil, headers: [String: String] = [:],
                     timeout: TimeInterval = 30) async throws -> Exchange {
        var request = URLRequest(url: URL(string: url)!, timeoutInterval: timeout)
        request.httpMethod = method
        request.httpBody = body
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        return try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: request) { data, response, error in
                if let error { return continuation.resume(throwing: error) }
                let http = response as! HTTPURLResponse
                var fields: [String: String] = [:]
                for (name, value) in http.allHeaderFields { fields["\(name)".lowercased()] = "\(value)" }
                // Every answer of a service the tests started is checked against the OpenAPI document.
                OpenAPIContract.check(method: method, url: url, status: http.statusCode, contentType: fields["content-type"],
                                      body: data ?? Data())
                continuation.resume(returning: Exchange(status: http.statusCode, headers: fields, body: data ?? Data()))
            }.resume()
        }
    }

    static func post(_ url: String, json: String, headers: [String: String] = [:]) async throws -> Exchange {
        try await send("POST", url, body: Data(json.utf8), headers: ["Content-Type": "application/json"].merging(headers) { $1 })
    }
}

/// Starts `attach-fetch serve --port 0 ARGUMENTS` with `environment` added to this process's,
/// and returns it with the port it printed ("listening on http://127.0.0.1:PORT"). Its standard
/// error is read on from then on, so that a chatty service never blocks on a full pipe.
func launchServe(_ arguments: [String], environment: [String: String], log: ServeLog? = nil) throws -> (Process, Int) {
    struct NoPort: Error, CustomStringConvertible { let description: String }
    let process = Process()
    process.executableURL = CLITests.executable
    process.arguments = ["serve", "--port", "0"] + arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let errors = Pipe()
    process.standardError = errors
    try process.run()
    var seen = ""
    while !seen.contains("listening on") || !seen.hasSuffix("\n") {
        let chunk = errors.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        seen += String(decoding: chunk, as: UTF8.self)
    }
    guard let port = seen.split(separator: ":").last.flatMap({ Int($0.prefix { $0.isNumber }) }) else {
        throw NoPort(description: seen)
    }
    log?.append(Data(seen.utf8))
    errors.fileHandleForReading.readabilityHandler = { handle in
        let data = handle.availableData
        log?.append(data)
    }
    OpenAPIContract.servicePorts.withLock { _ = $0.insert(port) }
    return (process, port)
}
