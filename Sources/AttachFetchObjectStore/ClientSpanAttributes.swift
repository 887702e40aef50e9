import Foundation
package import Tracing

/// The URL attributes a client span records, the object store's requests' here and the
/// pipeline's downloads' (`PipelineSpans`): OpenTelemetry's `url.full` (redacted),
/// `url.scheme`, `server.address` and `server.port`. In the lowest target with spans, so
/// that both record the same words.
package enum ClientSpanAttributes {
    /// A URL as spans may record it: scheme, host, port and path; never the user info, the
    /// query or the fragment (signed URLs and tokens live there).
    package static func redacted(_ url: String) -> String {
        guard var parts = URLComponents(string: url) else { return "(unparsable URL)" }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        parts.fragment = nil
        return parts.string ?? "(unparsable URL)"
    }

    /// Records `url`'s attributes on `span`, when it records.
    package static func record(url: String, on span: any Span) {
        guard span.isRecording else { return }
        let parts = URLComponents(string: url)
        span.attributes["url.full"] = redacted(url)
        if let scheme = parts?.scheme { span.attributes["url.scheme"] = scheme }
        if let host = parts?.host { span.attributes["server.address"] = host }
        if let port = parts?.port ?? (parts?.scheme == "https" ? 443 : parts?.scheme == "http" ? 80 : nil) {
            span.attributes["server.port"] = port
        }
    }
}
