import ArgumentParser
import AttachFetch
import AttachFetchService
import Foundation
import Logging
import UnixSignals

/// `attach-fetch serve`: the pipeline as an HTTP service.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the pipeline as an HTTP service for push backends in any language (see docs/service.md).",
        discussion: "SIGTERM or SIGINT: /readyz turns 503 (for --drain-delay seconds the listener still accepts), then the listener stops, batches in flight finish by their deadlines, the process exits 0."
    )

    /// The service's defaults, written once (`ServiceConfiguration`): each option starts there.
    private static let defaults = ServiceConfiguration()
    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    @Option(help: "Address to listen on.") var host = Self.defaults.host
    @Option(help: "Port to listen on (0: any free port, printed on standard error).") var port = Self.defaults.port
    @Option(name: .customLong("token-file"), help: ArgumentHelp("Require Authorization: Bearer <token> on every route but /healthz, /readyz, /metrics, /openapi.json, the inspector and /media; one token per line, in a file only its owner can read.", valueName: "FILE"))
    var tokenFile: String?
    @Flag(name: .customLong("allow-unauthenticated"),
          help: "Listen on an address other than loopback without --token-file: anyone who reaches it can make this service fetch, convert and publish.")
    var allowUnauthenticated = false
    @Option(name: .customLong("max-batches"), help: "Batches in flight at most; beyond that, 503 with Retry-After.")
    var maxBatches = Self.defaults.maxBatches
    @Option(name: .customLong("max-deadline"), help: ArgumentHelp("A request's deadline is clipped to this.", valueName: "SECONDS"))
    var maxDeadline = Self.seconds(Self.defaults.maxDeadline)
    @Option(help: ArgumentHelp("Batches' files (without publishing) are removed this long after their batch.", valueName: "SECONDS"))
    var retention = Self.seconds(Self.defaults.retention)
    @Option(name: .customLong("drain-delay"),
            help: ArgumentHelp("After SIGTERM/SIGINT, keep accepting this long with /readyz at 503, for load balancers to notice.", valueName: "SECONDS"))
    var drainDelay = Self.seconds(Self.defaults.drainDelay)
    @Option(name: .customLong("idle-timeout"),
            help: ArgumentHelp("Close a connection with no request in flight (or an incomplete request head) after this long.", valueName: "SECONDS"))
    var idleTimeout = Self.seconds(Self.defaults.connections.idleTimeout)
    @Option(name: .customLong("body-timeout"),
            help: ArgumentHelp("A request body that stalls this long gets 408 and its connection is closed.", valueName: "SECONDS"))
    var bodyTimeout = Self.seconds(Self.defaults.connections.bodyTimeout)
    @Option(name: .customLong("max-connections"), help: "Connections open at most; past it new connections are closed at once.")
    var maxConnections = Self.defaults.connections.maxConnections
    @Flag(name: .customLong("no-cache"), help: "Turn the result cache off (on by default in the service).")
    var noCache = false
    @Option(name: .customLong("whole-clip-budget"),
            help: ArgumentHelp("How long a transcode a caller's deadline cut short goes on, at a lower priority, to make the whole clip later calls get; 0 turns it off.", valueName: "SECONDS"))
    var wholeClipBudget = Self.seconds(Self.defaults.pipeline.cache?.wholeClipBudget ?? .zero)

    @OptionGroup(title: "Pipeline") var pipeline: PipelineOptions
    @OptionGroup(title: "Publishing and platforms") var publishing: PublishingOptions
    // The single-run command's payload options, which a service takes per request: named here
    // only to point there.
    @Flag(name: .customLong("rewrite"), help: .hidden) var rewriteAsked = false
    @Flag(name: .customLong("strip-failed"), help: .hidden) var stripFailedAsked = false
    @Flag(name: .shortAndLong, help: "Also log the pipeline's debug messages to standard error (each request is logged at info either way).")
    var verbose = false

    func validate() throws {
        for (asked, option) in [(rewriteAsked, "rewrite"), (stripFailedAsked, "stripFailed")] where asked {
            throw ValidationError("serve has no --\(option == "rewrite" ? "rewrite" : "strip-failed"): a caller asks for it per request, with POST /v1/payloads?\(option)=true (docs/service.md)")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard maxBatches >= 1 else { throw ValidationError("--max-batches must be at least 1") }
        guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1") }
        for (name, value) in [("--max-deadline", maxDeadline), ("--retention", retention), ("--idle-timeout", idleTimeout),
                              ("--body-timeout", bodyTimeout)] where !(value.isFinite && value > 0) {
            throw ValidationError("\(name) must be a number of seconds greater than 0")
        }
        guard wholeClipBudget.isFinite, (0...3_600).contains(wholeClipBudget) else {
            throw ValidationError("--whole-clip-budget must be a number of seconds from 0 (off) to 3600")
        }
        guard drainDelay.isFinite, drainDelay >= 0 else { throw ValidationError("--drain-delay must be a number of seconds, 0 or more") }
        if let tokenFile {
            do { _ = try ServiceConfiguration.tokens(fromFile: tokenFile) } catch { throw ValidationError("--token-file: \(error.message)") }
        }
        if tokenFile == nil, !allowUnauthenticated, !Self.isLoopback(host) {
            throw ValidationError("--host \(host) without --token-file would let anyone who reaches that address make this service fetch, convert and publish: give --token-file FILE, or --allow-unauthenticated to accept that")
        }
    }

    /// A number of seconds as the options take it: 30, 2.5.
    static func seconds(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    /// Whether `host` is a loopback address (127.0.0.0/8, ::1) or `localhost`: reachable from
    /// this machine only.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" { return true }
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        if inet_pton(AF_INET6, host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), &v6) == 1 {
            return withUnsafeBytes(of: v6) { $0.dropLast().allSatisfy { $0 == 0 } && $0.last == 1 }
        }
        return false
    }

    func run() async throws {
        var pipelineConfiguration = try pipeline.configuration()
        try publishing.apply(to: &pipelineConfiguration)
        // The service turns the cache on; --no-cache turns it off again.
        var configuration = ServiceConfiguration(pipeline: pipelineConfiguration)
        if noCache { configuration.pipeline.cache = nil }
        configuration.pipeline.cache?.wholeClipBudget = .milliseconds(Int64((wholeClipBudget * 1000).rounded()))
        configuration.host = host
        configuration.port = port
        configuration.maxBatches = maxBatches
        configuration.maxDeadline = .seconds(maxDeadline)
        configuration.retention = .seconds(retention)
        configuration.drainDelay = .seconds(drainDelay)
        configuration.connections.idleTimeout = .seconds(idleTimeout)
        configuration.connections.bodyTimeout = .seconds(bodyTimeout)
        configuration.connections.maxConnections = maxConnections
        if let tokenFile { configuration.tokens = try ServiceConfiguration.tokens(fromFile: tokenFile) }
        var logger = Logger(label: "attach-fetch") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = verbose ? .debug : .info
        // Kept starting (the options are a contract), but said: a request without a deadline
        // gets --max-deadline, not --deadline.
        if pipeline.deadline > maxDeadline {
            logger.warning("--deadline \(Self.seconds(pipeline.deadline)) is above --max-deadline \(Self.seconds(maxDeadline)): a request that gives no deadline gets \(Self.seconds(maxDeadline)) s")
        }
        let server: AttachFetchServer
        do {
            // OTEL_EXPORTER_OTLP_ENDPOINT and the rest (docs/observability.md); off when unset.
            let traces = try AttachFetchServer.bootstrapTracing(environment: ProcessInfo.processInfo.environment,
                                                               version: Release.version, logger: logger)
            server = try AttachFetchServer(configuration: configuration, logger: logger, traces: traces)
        } catch {
            throw ValidationError(error.message)
        }
        logger.info("decoders: \(server.decoderConfinement.summary)")
        do { try await server.checkObjectStore() } catch { throw ValidationError("--publish-to: \(error.message)") }
        try await server.run(gracefulShutdownSignals: [.sigterm, .sigint]) { port in
            FileHandle.standardError.write(Data("attach-fetch: listening on http://\(host.contains(":") ? "[\(host)]" : host):\(port)\n".utf8))
        }
    }
}
