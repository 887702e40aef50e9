#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one list of what a URL may carry that is a secret, used wherever a URL is written down:
/// logs at every level, spans (the pipeline's and the service's), error messages. User info
/// (`user:password@`) is dropped, and the value of every query parameter named here (any
/// case) is replaced by `REDACTED`: presigned object-store URLs (`X-Amz-*`), and the tokens
/// and keys media and API URLs commonly carry.
package enum URLRedaction {
    /// Query parameters whose values are secrets, compared without regard to case. Any name
    /// starting with `X-Amz-` is one too (a presigned URL's signature, credential, token).
    package static let secretQueryParameters: Set<String> = [
        "signature", "sig", "token", "access_token", "api_key", "apikey", "key", "auth", "password", "secret",
    ]

    /// Names the operator adds (`addSecretParameters`), lower-cased.
    private static let added = Locked(Set<String>())

    /// Adds query parameters whose values are secrets, for every redaction in this process
    /// from now on: an operator's own (`attach-fetch --secret-param`, the library's
    /// `AttachFetchConfiguration.addSecretQueryParameters`). Names are compared without regard to case.
    package static func addSecretParameters(_ names: some Sequence<String>) {
        let lowered = names.map { $0.lowercased() }.filter { !$0.isEmpty }
        added.withLock { $0.formUnion(lowered) }
    }

    /// Whether a query parameter's value is a secret.
    package static func isSecret(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return lowered.hasPrefix("x-amz-") || secretQueryParameters.contains(lowered) || added.withLock { $0.contains(lowered) }
    }

    /// The names to give a redactor that takes a list (the service's tracing middleware): each
    /// secret name as it is, capitalised and upper-cased, and the `X-Amz-*` ones S3 signs with.
    package static var spelledParameters: [String] {
        let amz = ["X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token", "X-Amz-Date", "X-Amz-Algorithm"]
        let names = secretQueryParameters.union(added.withLock { $0 }).sorted()
        return names.flatMap { [$0, $0.capitalized, $0.uppercased()] } + amz + amz.map { $0.lowercased() }
    }

    /// `url` without user info and with every secret query value replaced; text that does not
    /// parse as a URL is replaced whole.
    package static func redacted(_ url: String) -> String {
        guard var parts = URLComponents(string: url) else { return "(unparsable URL)" }
        parts.user = nil
        parts.password = nil
        if let items = parts.percentEncodedQueryItems {
            parts.percentEncodedQueryItems = items.map { isSecret($0.name) ? URLQueryItem(name: $0.name, value: "REDACTED") : $0 }
        }
        return parts.string ?? "(unparsable URL)"
    }
}
