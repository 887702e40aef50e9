import Foundation

/// Where and how `serve` exports spans, read from OpenTelemetry's environment variables. Off
/// (nil) unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set,
/// and off whenever `OTEL_SDK_DISABLED` is `true`. docs/observability.md lists every variable.
package struct TraceSettings: Sendable {
    /// The URL spans are POSTed to (the traces endpoint itself).
    package var endpoint: String
    /// Extra request headers, `Name: value` (`OTEL_EXPORTER_OTLP_HEADERS`): often a credential,
    /// so never logged.
    package var headers: [String] = []
    /// The resource's attributes, `service.name` first.
    package var resource: [(String, String)] = []
    package var sampler: TraceSampler = .parentBased(root: .alwaysOn)
    /// Spans held at most while the collector is slow or down (`OTEL_BSP_MAX_QUEUE_SIZE`, 2048).
    package var maxQueueSize = 2048
    /// Spans in one export at most (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, 512).
    package var maxExportBatch = 512
    /// The longest a span waits before its export starts (`OTEL_BSP_SCHEDULE_DELAY`, 5000 ms).
    package var scheduleDelay: Duration = .seconds(5)
    /// One export's limit (`OTEL_BSP_EXPORT_TIMEOUT`, 10000 ms here; the specification's 30 s
    /// would hold the only export slot for half a minute when the collector hangs).
    package var exportTimeout: Duration = .seconds(10)

    package static func fromEnvironment(_ environment: [String: String]) throws(TraceSettingsError) -> TraceSettings? {
        func value(_ name: String) -> String? {
            environment[name].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0.trimmingCharacters(in: .whitespaces) }
        }
        if value("OTEL_SDK_DISABLED")?.lowercased() == "true" { return nil }
        let endpoint: String
        if let traces = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            endpoint = traces
        } else if let base = value("OTEL_EXPORTER_OTLP_ENDPOINT") {
            endpoint = base.hasSuffix("/") ? base + "v1/traces" : base + "/v1/traces"
        } else {
            return nil
        }
        guard let url = URLComponents(string: endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
            throw TraceSettingsError("the OTLP endpoint must be an http or https URL, not '\(endpoint.prefix(80))'")
        }
        // `http/protobuf` is OpenTelemetry's default name, so it is accepted; what is sent is
        // JSON either way, which OTLP/HTTP receivers take on the same path by its Content-Type.
        let proto = value("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? value("OTEL_EXPORTER_OTLP_PROTOCOL")
        if let proto, !["http/json", "http/protobuf"].contains(proto.lowercased()) {
            throw TraceSettingsError("attach-fetch exports OTLP over HTTP in JSON; OTEL_EXPORTER_OTLP_PROTOCOL '\(proto)' is not one it speaks (use http/json)")
        }
        var settings = TraceSettings(endpoint: endpoint)
        for pair in try pairs(value("OTEL_EXPORTER_OTLP_TRACES_HEADERS") ?? value("OTEL_EXPORTER_OTLP_HEADERS"), "OTEL_EXPORTER_OTLP_HEADERS") {
            settings.headers.append("\(pair.0): \(pair.1)")
        }
        let resource = try pairs(value("OTEL_RESOURCE_ATTRIBUTES"), "OTEL_RESOURCE_ATTRIBUTES")
        let name = value("OTEL_SERVICE_NAME") ?? resource.first { $0.0 == "service.name" }?.1 ?? "attach-fetch"
        settings.resource = [("service.name", name)] + resource.filter { $0.0 != "service.name" }
        settings.sampler = try TraceSampler(name: value("OTEL_TRACES_SAMPLER"), argument: value("OTEL_TRACES_SAMPLER_ARG"))
        func number(_ name: String, _ range: ClosedRange<Int>) throws(TraceSettingsError) -> Int? {
            guard let text = value(name) else { return nil }
            guard let number = Int(text), range.contains(number) else {
                throw TraceSettingsError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text.prefix(40))'")
            }
            return number
        }
        settings.maxQueueSize = try number("OTEL_BSP_MAX_QUEUE_SIZE", 1...1_000_000) ?? settings.maxQueueSize
        settings.maxExportBatch = min(settings.maxQueueSize, try number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1...1_000_000) ?? settings.maxExportBatch)
        if let delay = try number("OTEL_BSP_SCHEDULE_DELAY", 1...3_600_000) { settings.scheduleDelay = .milliseconds(delay) }
        if let timeout = try number("OTEL_BSP_EXPORT_TIMEOUT", 1...3_600_000) { settings.exportTimeout = .milliseconds(timeout) }
        return settings
    }

    package init(endpoint: String) {
        self.endpoint = endpoint
    }

    /// `key=value,key=value`, each part percent-decoded (the specification's W3C Baggage form).
    private static func pairs(_ text: String?, _ name: String) throws(TraceSettingsError) -> [(String, String)] {
        guard let text else { return [] }
        var out: [(String, String)] = []
        for (index, item) in text.split(separator: ",").enumerated() {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, let key = parts[0].removingPercentEncoding,
                  let value = parts[1].removingPercentEncoding else {
                // The text may be a credential: only the pair's place is named.
                throw TraceSettingsError("\(name) takes key=value pairs separated by commas; pair \(index + 1) is not one")
            }
            out.append((key, value))
        }
        return out
    }
}
