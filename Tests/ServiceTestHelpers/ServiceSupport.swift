import AttachFetch
import AttachFetchCore
import AttachFetchService
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import TestHelpers
import Testing


/// A real `AttachFetchServer` on 127.0.0.1:0, stopped (and its files removed) at the end.
package final class RunningServer: Sendable {
    package let server: AttachFetchServer
    package let port: Int
    private let task: Task<Void, any Error>

    package static func start(_ scratch: Scratch, logger: Logger = AttachmentPipeline.silentLogger,
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

    package var base: String { "http://127.0.0.1:\(port)" }

    package func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

/// The value of the first Prometheus sample line starting with `prefix` (name and labels).
package func metricValue(_ text: String, _ prefix: String) -> Double? {
    text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.split(separator: " ").last ?? "") }
}

/// One HTTP exchange through URLSession (libcurl underneath on Linux).
package struct Exchange {
    package var status: Int
    package var headers: [String: String]
    package var body: Data

    package var text: String { String(decoding: body, as: UTF8.self) }
    package var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    package var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }

    package static func send(_ method: String, _ url: String, body: Data? = nil, headers: [String: String] = [:],
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

    package static func post(_ url: String, json: String, headers: [String: String] = [:]) async throws -> Exchange {
        try await send("POST", url, body: Data(json.utf8), headers: ["Content-Type": "application/json"].merging(headers) { $1 })
    }
}

/// Starts `attach-fetch serve --port 0 ARGUMENTS` with `environment` added to this process's,
/// and returns it with the port it printed ("listening on http://127.0.0.1:PORT"). Its standard
/// error is read on from then on, so that a chatty service never blocks on a full pipe.
package func launchServe(_ arguments: [String], environment: [String: String], log: ServeLog? = nil) throws -> (Process, Int) {
    struct NoPort: Error, CustomStringConvertible { let description: String }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: builtExecutable("attach-fetch"))
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

/// The standard error of a launched service, collected.
package final class ServeLog: Sendable {
    private let collected = Locked("")
    package init() {}
    package func append(_ data: Data) { collected.withLock { $0 += String(decoding: data, as: UTF8.self) } }
    package var text: String { collected.withLock { $0 } }
}

/// An FCM HTTP v1 message naming four images: the shared notification's, Android's, the APNs
/// override's and one in `data`.
package func fcmMessage(shared: String, android: String, apns: String, data: String) -> String {
    """
    {"message": {"token": "device",
      "notification": {"title": "Sale", "body": "Now on", "image": "\(shared)"},
      "android": {"notification": {"image": "\(android)"}},
      "apns": {"payload": {"aps": {"alert": {"title": "Sale"}, "mutable-content": 1}},
               "fcm_options": {"image": "\(apns)"}},
      "data": {"image": "\(data)"}}}
    """
}

/// A swift-log handler that keeps what it is given.
package final class CapturedLog: LogHandler, @unchecked Sendable {
    // @unchecked Sendable: `stored` is only touched under `lock`; the rest is set before use.
    package struct Entry { package var level: Logger.Level; package var message: String; package var metadata: Logger.Metadata = [:] }
    private let lock = NSLock()
    package init() {}
    private var stored: [Entry] = []
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .trace

    package var entries: [Entry] { lock.withLock { stored } }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let metadata = self.metadata.merging(event.metadata ?? [:]) { $1 }
        lock.withLock { stored.append(Entry(level: event.level, message: event.message.description, metadata: metadata)) }
    }
}
