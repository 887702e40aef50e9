import AttachFetchCore
import AttachFetchTransfer
import Foundation

/// Where ready files are published when they go to an S3-compatible object store (Amazon S3,
/// MinIO, SeaweedFS, Ceph, R2, Google Cloud Storage's XML API) instead of a directory. With
/// result caching on, the store is also the result cache that replicas share
/// (docs/deployment.md).
public struct ObjectStorePublishing: Sendable, Equatable {
    /// The bucket. It must exist; it is checked once at start (``AttachmentPipeline/checkObjectStore(timeout:)``).
    public var bucket: String
    /// Keys start with this (no leading or trailing `/`; empty for the bucket's root). Letters,
    /// digits, `.`, `_`, `-` and `/` only, so that a key never needs escaping.
    public var prefix: String
    /// The public http(s) URL at which `prefix` is served (a CDN in front of the bucket), the
    /// prefix of every `publishedUrl`.
    public var baseURL: String
    /// The store's URL (`http://127.0.0.1:8333`). Nil: AWS's regional endpoint.
    public var endpoint: String?
    /// The signing region. Default `us-east-1`.
    public var region: String
    /// Virtual-hosted-style addressing (`https://BUCKET.host/KEY`). Default: path style
    /// (`https://host/BUCKET/KEY`) whenever an endpoint is given, virtual-hosted for AWS's own.
    public var virtualHostedStyle: Bool
    /// Who signs the requests.
    public var credentials: ObjectStoreCredentials
    /// Attempts per request on `5xx`, `SlowDown` and connection failures, within the deadline. Default 4.
    public var maxAttempts = 4

    /// Publishes under `s3://BUCKET/PREFIX` (`location`), served at `baseURL`.
    public init(location: String, baseURL: String, endpoint: String? = nil, region: String = "us-east-1",
                virtualHostedStyle: Bool? = nil, credentials: ObjectStoreCredentials) throws(AttachFetchError) {
        guard location.hasPrefix("s3://") else {
            throw .invalidConfiguration("the object store location must look like s3://BUCKET/PREFIX, not '\(location)'")
        }
        let rest = location.dropFirst(5)
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        bucket = String(parts[0])
        prefix = parts.count > 1 ? String(parts[1]).trimmingCharacters(in: CharacterSet(charactersIn: "/")) : ""
        self.baseURL = baseURL
        self.endpoint = endpoint
        self.region = region
        self.virtualHostedStyle = virtualHostedStyle ?? (endpoint == nil)
        self.credentials = credentials
    }

    /// Reads what the command line does not give from the environment, as AWS's tools do: the
    /// endpoint from `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`; the region from
    /// `AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`; the credentials as
    /// ``ObjectStoreCredentials/fromEnvironment(_:)`` reads them.
    public static func fromEnvironment(location: String, baseURL: String, endpoint: String? = nil,
                                       virtualHostedStyle: Bool? = nil,
                                       environment: [String: String] = ProcessInfo.processInfo.environment) throws(AttachFetchError) -> Self {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let region = value("AWS_REGION") ?? value("AWS_DEFAULT_REGION") ?? "us-east-1"
        return try Self(location: location, baseURL: baseURL, endpoint: endpoint ?? value("AWS_ENDPOINT_URL_S3") ?? value("AWS_ENDPOINT_URL"),
                        region: region, virtualHostedStyle: virtualHostedStyle,
                        credentials: try ObjectStoreCredentials.fromEnvironment(environment))
    }

    package func validate() throws(AttachFetchError) {
        let bucketCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789.-")
        guard (3...63).contains(bucket.count), bucket.unicodeScalars.allSatisfy(bucketCharacters.contains) else {
            throw .invalidConfiguration("'\(bucket)' is not a bucket name (3 to 63 lowercase letters, digits, '.' and '-')")
        }
        let keyCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/")
        guard prefix.unicodeScalars.allSatisfy(keyCharacters.contains), !prefix.contains("//") else {
            throw .invalidConfiguration("the key prefix '\(prefix)' may hold letters, digits, '.', '_', '-' and single '/' only")
        }
        let scheme = baseURL.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
        guard scheme == "http" || scheme == "https", URLCheck.problem(with: baseURL) == nil else {
            throw .invalidConfiguration("the public base URL must be an http:// or https:// URL, not '\(baseURL)'")
        }
        if let endpoint {
            let endpointScheme = endpoint.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
            guard endpointScheme == "http" || endpointScheme == "https", URL(string: endpoint)?.host != nil else {
                throw .invalidConfiguration("the object store endpoint must be an http:// or https:// URL, not '\(endpoint)'")
            }
        }
        guard !region.isEmpty, region.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
            throw .invalidConfiguration("'\(region)' is not a region name")
        }
        guard maxAttempts >= 1 else { throw .invalidConfiguration("maxAttempts must be at least 1") }
    }

    /// The key of a published name or a result object under the prefix.
    package func key(_ name: String) -> String { prefix.isEmpty ? name : "\(prefix)/\(name)" }

    /// The request URL of `key` (or of the bucket, for an empty key).
    package func url(ofKey key: String) -> String {
        let base = endpoint.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 } ?? "https://s3.\(region).amazonaws.com"
        if virtualHostedStyle, var parts = URLComponents(string: base), let host = parts.host {
            parts.host = "\(bucket).\(host)"
            return (parts.string ?? base) + "/" + key
        }
        return "\(base)/\(bucket)" + (key.isEmpty ? "" : "/\(key)")
    }

    /// The public URL of a published name.
    package func publicURL(of name: String) -> String {
        (baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL) + "/" + name
    }
}

/// Credentials that sign object-store requests. They are never printed: `description` hides
/// them, and no log line, descriptor, metric or error message carries them.
public struct ObjectStoreCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The access key id (`AWS_ACCESS_KEY_ID`).
    public var accessKeyID: String
    /// The secret access key (`AWS_SECRET_ACCESS_KEY`).
    public var secretAccessKey: String
    /// For temporary credentials (`AWS_SESSION_TOKEN`).
    public var sessionToken: String?

    /// Credentials given by the program (read them from a secret store, never a command line).
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// Never the credentials themselves.
    public var description: String { "ObjectStoreCredentials(redacted)" }
    /// Never the credentials themselves.
    public var debugDescription: String { description }

    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (with the optional
    /// `AWS_SESSION_TOKEN`) when both are set; else the profile `AWS_PROFILE` (default
    /// `default`) of the shared credentials file `AWS_SHARED_CREDENTIALS_FILE` (default
    /// `~/.aws/credentials`). Throws, naming what is missing, when neither gives a pair.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(AttachFetchError) -> Self {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if let key = value("AWS_ACCESS_KEY_ID"), let secret = value("AWS_SECRET_ACCESS_KEY") {
            return Self(accessKeyID: key, secretAccessKey: secret, sessionToken: value("AWS_SESSION_TOKEN"))
        }
        let profile = value("AWS_PROFILE") ?? "default"
        let path = value("AWS_SHARED_CREDENTIALS_FILE") ?? "\(value("HOME") ?? NSHomeDirectory())/.aws/credentials"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw .invalidConfiguration("no object store credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give a shared credentials file (\(path) cannot be read)")
        }
        let values = sharedFileProfile(profile, in: text)
        guard let key = values["aws_access_key_id"], let secret = values["aws_secret_access_key"] else {
            throw .invalidConfiguration("no object store credentials: the profile '\(profile)' of \(path) has no aws_access_key_id and aws_secret_access_key")
        }
        return Self(accessKeyID: key, secretAccessKey: secret, sessionToken: values["aws_session_token"])
    }

    /// The `name = value` lines of one `[profile]` section of a shared credentials file.
    package static func sharedFileProfile(_ profile: String, in text: String) -> [String: String] {
        var section: String?
        var values: [String: String] = [:]
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                continue
            }
            guard section == profile, let equals = line.firstIndex(of: "=") else { continue }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            values[name] = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        return values
    }
}
