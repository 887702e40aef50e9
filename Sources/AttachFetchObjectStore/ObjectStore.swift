import AttachFetchCore
import Foundation
import Logging

/// A failed object-store operation, in words fit for a descriptor or a log line: the store's
/// own error code (`AccessDenied`, `NoSuchBucket`, `SignatureDoesNotMatch`) and message, or
/// the connection's failure. It never carries a credential.
package struct ObjectStoreError: Error, Sendable, Equatable {
    /// The store's XML `Code`, or `ConnectionFailed`, `DeadlineExceeded`, `Cancelled`, `LocalError`.
    package var code: String
    /// The HTTP status, when the store answered.
    package var status: Int?
    package var message: String

    package init(code: String, status: Int? = nil, message: String) {
        (self.code, self.status, self.message) = (code, status, message)
    }

    /// The caller's deadline or cancellation ended the request, not the store.
    package var endedByCaller: Bool { code == "Cancelled" || code == "DeadlineExceeded" }

    package var description: String {
        status.map { "the object store answered HTTP \($0) \(code): \(message)" } ?? "object store \(code): \(message)"
    }
}

/// The S3 operations publishing and the shared results need, over the `StoreEngine`, each
/// signed by libcurl and retried with jittered backoff on `5xx` (`503 SlowDown` among them)
/// and connection failures, never past the caller's deadline.
package final class ObjectStore: Sendable {
    package let target: ObjectStorePublishing
    private let engine: StoreEngine
    private let logger: Logger
    /// Requests sent, by method (`PUT`, `GET`, `HEAD`, `DELETE`), retries included.
    private let sent = Locked<[String: Int]>([:])

    /// Requests sent so far, by method (for metrics and benchmarks).
    package var requestCounts: [String: Int] { sent.withLock { $0 } }

    /// What request deadlines are instants of: the pipeline's clock.
    package let clock: AttachFetchClock

    package init(target: ObjectStorePublishing, maxConcurrent: Int, clock: AttachFetchClock = .system, logger: Logger) throws(AttachFetchError) {
        self.target = target
        self.logger = logger
        self.clock = clock
        engine = try StoreEngine(credentials: target.credentials, region: target.region, maxConcurrent: maxConcurrent, clock: clock)
    }

    /// Blocks until the engine's thread has stopped: call from a thread of its own.
    package func shutdown() { engine.shutdown() }

    /// Whether the bucket exists and the credentials are accepted: `HEAD` bucket, then, when it
    /// fails, a `GET` of the bucket for the store's words (a `HEAD` answer has no body).
    package func checkBucket(deadline: ContinuousClock.Instant) async throws(ObjectStoreError) {
        let head = try await send(StoreRequest(method: .head, url: target.url(ofKey: ""), deadline: deadline))
        if (200..<300).contains(head.status) { return }
        let listing = try await send(StoreRequest(method: .get, url: target.url(ofKey: "") + "?list-type=2&max-keys=1",
                                                  deadline: deadline))
        throw error(for: (200..<300).contains(listing.status) || listing.body.isEmpty ? head : listing)
    }

    package enum PutResult: Sendable, Equatable {
        case created
        /// `If-None-Match: *` and the key was taken (412): nothing was written.
        case alreadyThere
    }

    /// Writes one object whole. `sha256` (hex) is the body's: sent as the signed payload hash
    /// and as `x-amz-checksum-sha256`, so that the store refuses a body damaged on the way.
    /// With `onlyIfAbsent`, an object already under the key is left alone (`alreadyThere`).
    package func put(_ key: String, body: StoreRequest.Body, sha256: String, contentType: String, cacheControl: String?,
             onlyIfAbsent: Bool, deadline: ContinuousClock.Instant) async throws(ObjectStoreError) -> PutResult {
        var headers = ["Content-Type: \(contentType)", "x-amz-content-sha256: \(sha256)",
                       "x-amz-checksum-sha256: \(Self.base64(hex: sha256))"]
        if let cacheControl { headers.append("Cache-Control: \(cacheControl)") }
        if onlyIfAbsent { headers.append("If-None-Match: *") }
        let response = try await send(StoreRequest(method: .put, url: target.url(ofKey: key), headers: headers, body: body,
                                                   deadline: deadline))
        if (200..<300).contains(response.status) { return .created }
        if onlyIfAbsent, response.status == 412 { return .alreadyThere }
        throw error(for: response)
    }

    /// An object's bytes (small ones: results, leases), or nil when there is none.
    package func get(_ key: String, limit: Int = 1 << 20, deadline: ContinuousClock.Instant) async throws(ObjectStoreError) -> [UInt8]? {
        let response = try await send(StoreRequest(method: .get, url: target.url(ofKey: key), destination: .memory(limit: limit),
                                                   deadline: deadline))
        return try found(response) ? response.body : nil
    }

    /// Streams an object into a new file at `path`; false when there is no such object.
    package func download(_ key: String, to path: String, deadline: ContinuousClock.Instant) async throws(ObjectStoreError) -> Bool {
        let response = try await send(StoreRequest(method: .get, url: target.url(ofKey: key), destination: .file(path: path),
                                                   deadline: deadline))
        return try found(response)
    }

    /// Whether an object is under `key` (`HEAD`).
    package func exists(_ key: String, deadline: ContinuousClock.Instant) async throws(ObjectStoreError) -> Bool {
        try found(await send(StoreRequest(method: .head, url: target.url(ofKey: key), deadline: deadline)))
    }

    /// An answer about one object: true for 2xx, false for 404, the store's error otherwise.
    private func found(_ response: StoreResponse) throws(ObjectStoreError) -> Bool {
        if response.status == 404 { return false }
        guard (200..<300).contains(response.status) else { throw error(for: response) }
        return true
    }

    /// Removes an object (nothing happens when there is none).
    package func delete(_ key: String, deadline: ContinuousClock.Instant) async throws(ObjectStoreError) {
        let response = try await send(StoreRequest(method: .delete, url: target.url(ofKey: key), deadline: deadline))
        guard (200..<300).contains(response.status) || response.status == 404 else { throw error(for: response) }
    }

    // MARK: Retries

    /// One request, tried again after `5xx` and connection failures while the deadline allows
    /// (full jitter: a random wait up to 50 ms × 2^attempt, at most 1 s).
    private func send(_ request: StoreRequest) async throws(ObjectStoreError) -> StoreResponse {
        var attempt = 0
        while true {
            attempt += 1
            sent.withLock { $0[request.method.rawValue, default: 0] += 1 }
            let result = await engine.perform(request)
            var retryable: ObjectStoreError
            switch result {
            case .success(let response):
                guard response.status >= 500 || response.status == 429, attempt < target.maxAttempts else { return response }
                retryable = error(for: response)
            case .failure(let failure):
                let mapped = Self.error(for: failure)
                guard failure.kind == .connection, attempt < target.maxAttempts else { throw mapped }
                retryable = mapped
            }
            let ceiling = min(1000.0, 50.0 * pow(2.0, Double(attempt - 1)))
            let pause = Duration.milliseconds(Int.random(in: 0...Int(ceiling)))
            guard clock.now + pause < request.deadline else { throw retryable }
            logger.debug("object store request retried", metadata: ["attempt": "\(attempt)", "problem": "\(retryable.code)"])
            do { try await Task.sleep(for: pause) } catch { throw ObjectStoreError(code: "Cancelled", message: "the request was cancelled") }
        }
    }

    private static func error(for failure: StoreCallFailure) -> ObjectStoreError {
        switch failure.kind {
        case .connection: ObjectStoreError(code: "ConnectionFailed", message: failure.message)
        case .deadline: ObjectStoreError(code: "DeadlineExceeded", message: failure.message)
        case .cancelled: ObjectStoreError(code: "Cancelled", message: failure.message)
        case .local: ObjectStoreError(code: "LocalError", message: failure.message)
        }
    }

    /// The store's error document read: its `Code` and `Message`, with anything that looks
    /// like one of the credentials taken out.
    private func error(for response: StoreResponse) -> ObjectStoreError {
        let text = String(decoding: response.body, as: UTF8.self)
        func element(_ name: String) -> String? {
            guard let open = text.range(of: "<\(name)>"), let close = text.range(of: "</\(name)>", range: open.upperBound..<text.endIndex) else { return nil }
            return String(text[open.upperBound..<close.lowerBound])
        }
        let fallback: String = switch response.status {
        case 403: "AccessDenied"
        case 404: "NoSuchBucket"
        case 412: "PreconditionFailed"
        case 503: "ServiceUnavailable"
        default: "HTTP\(response.status)"
        }
        var message = element("Message") ?? "no message"
        let credentials = target.credentials
        for secret in [credentials.secretAccessKey, credentials.accessKeyID, credentials.sessionToken ?? ""] where secret.count >= 4 {
            message = message.replacingOccurrences(of: secret, with: "[redacted]")
        }
        return ObjectStoreError(code: element("Code") ?? fallback, status: response.status, message: message)
    }

    package static func base64(hex: String) -> String {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return Data(bytes).base64EncodedString()
    }
}
