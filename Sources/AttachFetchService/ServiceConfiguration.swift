import AttachFetch
import Foundation

/// How `attach-fetch serve` runs. Every default is the documented one.
public struct ServiceConfiguration: Sendable {
    /// Address to listen on. Default 127.0.0.1 (loopback: put a proxy in front to expose it).
    public var host = "127.0.0.1"
    /// Port; 0 picks a free one (reported once listening). Default 8080.
    public var port = 8080
    /// Bearer tokens accepted on `/v1` routes; empty: no authentication. Default empty.
    public var tokens: [String] = []
    /// Batches in flight at most; beyond that, 503 with Retry-After at once. Default 64.
    public var maxBatches = 64
    /// A request's deadline is clipped to this (never refused). Default 25 s.
    public var maxDeadline: Duration = .seconds(25)
    /// Ready files of batches (when not publishing) are removed this long after their batch
    /// (never sooner than `maxDeadline` and a second: a running batch's files stay). Default 1 hour.
    public var retention: Duration = .seconds(3600)
    /// After SIGTERM or SIGINT, how long `/readyz` answers 503 while the listener still accepts
    /// (and serves) calls, before it closes: time for a load balancer's readiness checks to take
    /// the replica out. Default 0 (the listener closes at once).
    public var drainDelay: Duration = .zero
    /// Largest request body. Default 1 MiB.
    public var maxBodyBytes = 1 << 20
    /// Most requests in one call. Default 100.
    public var maxRequestsPerCall = 100
    /// How client connections are bounded in time and number.
    public var connections = Connections()
    /// The pipeline's settings. The service turns the result cache on unless it is set.
    public var pipeline: AttachFetchConfiguration

    /// Client connections: how long they may idle or stall, and how many may be open.
    public struct Connections: Sendable {
        /// A connection with no request in flight, or whose request head is not complete, is
        /// closed after this long. A request being answered (a batch running, an NDJSON stream
        /// between lines) is never cut by it. Default 30 s; behind a load balancer, keep the
        /// balancer's own idle timeout shorter than this.
        public var idleTimeout: Duration = .seconds(30)
        /// A request body that stalls (no bytes) for this long is answered 408
        /// (`requestTimeout`) and its connection closed. Default 10 s.
        public var bodyTimeout: Duration = .seconds(10)
        /// Connections open at most; past it a new connection is closed at once (and counted),
        /// while established ones keep working. Default 4,096.
        public var maxConnections = 4096

        /// The documented defaults.
        public init() {}
    }

    /// The documented defaults around `pipeline`, with the result cache turned on unless it is set.
    public init(pipeline: AttachFetchConfiguration = .init()) {
        var pipeline = pipeline
        if pipeline.cache == nil { pipeline.cache = ResultCaching() }
        self.pipeline = pipeline
    }

    func validate() throws(AttachFetchError) {
        guard (0...65535).contains(port) else { throw .invalidConfiguration("--port must be between 0 and 65535") }
        guard maxBatches >= 1 else { throw .invalidConfiguration("--max-batches must be at least 1") }
        guard maxDeadline > .zero else { throw .invalidConfiguration("--max-deadline must be greater than zero") }
        guard retention > .zero else { throw .invalidConfiguration("--retention must be greater than zero") }
        guard drainDelay >= .zero else { throw .invalidConfiguration("--drain-delay must not be negative") }
        guard connections.idleTimeout > .zero else { throw .invalidConfiguration("--idle-timeout must be greater than zero") }
        guard connections.bodyTimeout > .zero else { throw .invalidConfiguration("--body-timeout must be greater than zero") }
        guard connections.maxConnections >= 1 else { throw .invalidConfiguration("--max-connections must be at least 1") }
        guard !tokens.contains(where: \.isEmpty) else { throw .invalidConfiguration("tokens must not be empty") }
        try pipeline.validate()
    }

    /// Reads a token file: one token per line; blank lines and lines starting with # skipped.
    public static func tokens(fromFile path: String) throws(AttachFetchError) -> [String] {
        let data = try SecretFile.read(path, what: "the token file")
        let tokens = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        guard !tokens.isEmpty else { throw .invalidConfiguration("the token file \(path) holds no token") }
        return tokens
    }
}
