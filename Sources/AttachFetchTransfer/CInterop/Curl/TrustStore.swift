package import CCurl
import Foundation

/// The certificates a pipeline's transfers trust when the configuration adds some: the system
/// bundle libcurl would use, followed by the added ones, as one PEM blob handed to every
/// transfer (`CURLOPT_CAINFO_BLOB`, copied by libcurl). Immutable after `init`, so Sendable.
package final class TrustStore: Sendable {
    package let pem: [UInt8]

    /// Nil when nothing is added: transfers then use libcurl's defaults untouched.
    package static func adding(_ certificates: [String]) throws(AttachFetchError) -> TrustStore? {
        guard !certificates.isEmpty else { return nil }
        var pem: [UInt8] = []
        if let system = systemBundlePath(), let bundle = FileManager.default.contents(atPath: system) {
            pem.append(contentsOf: bundle)
            pem.append(0x0A)
        }
        for certificate in certificates {
            pem.append(contentsOf: certificate.utf8)
            pem.append(0x0A)
        }
        return TrustStore(pem: pem)
    }

    private init(pem: [UInt8]) { self.pem = pem }

    /// The CA bundle this libcurl was built to use (`CURLINFO_CAINFO`), read from a fresh handle.
    private static func systemBundlePath() -> String? {
        guard let handle = curl_easy_init() else { return nil }
        defer { curl_easy_cleanup(handle) }
        return CurlOption.string(handle, CURLINFO_CAINFO)
    }

    /// Hands the bundle to one transfer; libcurl copies it before this returns.
    /// No Swift copy of the bundle per transfer: `curl_blob.data` is declared mutable, but with
    /// CURL_BLOB_COPY libcurl only reads it, into its own copy.
    package func apply(to handle: UnsafeMutableRawPointer) -> CURLcode {
        pem.withUnsafeBytes { buffer in
            var blob = curl_blob(data: UnsafeMutableRawPointer(mutating: buffer.baseAddress), len: buffer.count,
                                 flags: UInt32(CURL_BLOB_COPY))
            return withUnsafeMutablePointer(to: &blob) { CurlOption.set(handle, CURLOPT_CAINFO_BLOB, pointer: UnsafeMutableRawPointer($0)) }
        }
    }
}
