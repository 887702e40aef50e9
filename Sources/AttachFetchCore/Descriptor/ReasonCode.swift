/// Why an attachment is not `ready`. The raw values are part of the public JSON contract:
/// codes are only ever added, never renamed or removed. A struct rather than an enum so that
/// adding a code is not a source-breaking change for callers that switch over codes.
public struct ReasonCode: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    /// The code as it appears in the JSON.
    public let rawValue: String
    /// Any code, including one this version does not know.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The raw value.
    public var description: String { rawValue }

    /// Empty, no scheme, no host, or unparsable. Rejected.
    public static let invalidURL = ReasonCode(rawValue: "invalidURL")
    /// A scheme other than http or https, also on a redirect hop. Rejected.
    public static let unsupportedScheme = ReasonCode(rawValue: "unsupportedScheme")
    /// The address about to be connected to is loopback, private, link-local or otherwise
    /// refused by the address policy. Rejected.
    public static let forbiddenAddress = ReasonCode(rawValue: "forbiddenAddress")
    /// Refused, unresolvable or unreachable. Failed.
    public static let connectFailed = ReasonCode(rawValue: "connectFailed")
    /// The server answered with a status that is not 2xx; the message names it.
    public static let httpStatus = ReasonCode(rawValue: "httpStatus")
    /// More redirects than `maxRedirects`. Failed.
    public static let tooManyRedirects = ReasonCode(rawValue: "tooManyRedirects")
    /// Reset, short body, protocol error.
    public static let transferFailed = ReasonCode(rawValue: "transferFailed")
    /// A per-request timeout: connect, total, or no bytes for the stall interval.
    public static let timeout = ReasonCode(rawValue: "timeout")
    /// The batch deadline came first.
    public static let deadlineExceeded = ReasonCode(rawValue: "deadlineExceeded")
    /// Declared or streamed size over the limit of the kind (or over the largest limit before
    /// the type is known), or an image that could not be fitted. Rejected.
    public static let sizeLimitExceeded = ReasonCode(rawValue: "sizeLimitExceeded")
    /// Bytes that are not in the table (nor convertible), or a stream codec the formats do
    /// not carry. Rejected.
    public static let unsupportedType = ReasonCode(rawValue: "unsupportedType")
    /// The image, container or a stream does not decode in full. Rejected.
    public static let corruptMedia = ReasonCode(rawValue: "corruptMedia")
    /// A 2xx answer with no body. Rejected.
    public static let emptyBody = ReasonCode(rawValue: "emptyBody")
    /// More pixels than `maxImagePixels`, checked from the header before decoding. Rejected.
    public static let pixelLimitExceeded = ReasonCode(rawValue: "pixelLimitExceeded")
    /// The calling task was cancelled. Failed.
    public static let cancelled = ReasonCode(rawValue: "cancelled")
    /// A file could not be written (or would overwrite one), or a library failed internally. Failed.
    public static let ioError = ReasonCode(rawValue: "ioError")
    /// The decoder worker process handling this attachment died (a signal, or a memory, CPU or
    /// file-size limit); the message names the signal. Only this attachment fails.
    public static let decoderCrashed = ReasonCode(rawValue: "decoderCrashed")

    /// The TLS handshake or the certificate check failed: an untrusted CA, a wrong host name, an
    /// expired certificate, a server offering only TLS below 1.2. The message is the verifier's
    /// own.
    public static let tlsFailed = ReasonCode(rawValue: "tlsFailed")

    /// The media cannot be shown on that platform at all (audio or
    /// video on Android). Used in `variants`, never as an attachment's own reason.
    public static let unsupportedOnPlatform = ReasonCode(rawValue: "unsupportedOnPlatform")

    /// The object store refused or never took a ready file
    /// (after retries within the deadline); the message names the store's error code
    /// (`AccessDenied`, `NoSuchBucket`, `ConnectionFailed`). Nothing is visible under a key
    /// unless it is whole. Failed.
    public static let publishFailed = ReasonCode(rawValue: "publishFailed")

    /// The per-host circuit breaker is open: the origin's host failed several times in a row
    /// (connect failures, timeouts, TLS failures or 5xx answers), so it is left alone for a
    /// cool-down and this request was not sent. The message names the host, what failed and
    /// until when. Transient: never cached. Failed.
    public static let originUnavailable = ReasonCode(rawValue: "originUnavailable")

    /// The request asked for its media to be published
    /// encrypted, but the pipeline has no media key (`mediaEncryption`), so nothing was
    /// fetched or published. Failed.
    public static let encryptionUnavailable = ReasonCode(rawValue: "encryptionUnavailable")

    /// Every code this version knows, in contract order (`contracts`).
    public static let allKnown: [ReasonCode] = contracts.map(\.code)

    /// The descriptor status a code implies (fixed by the contract, `contracts`); `failed` for
    /// a code this version does not know.
    public var status: AttachmentDescriptor.Status { Self.contractByCode[self]?.status ?? .failed }

    private static let contractByCode = Dictionary(uniqueKeysWithValues: contracts.map { ($0.code, $0) })

    /// Decodes a code from its string, known or not.
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    /// Encodes the code as its string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The library's one (code, message) type, by its short name.
package typealias Reason = AttachmentDescriptor.Reason
