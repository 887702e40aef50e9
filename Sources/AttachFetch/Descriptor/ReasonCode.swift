/// Why an attachment is not `ready`. The raw values are part of the public JSON contract:
/// codes are only ever added, never renamed or removed. A struct rather than an enum so that
/// adding a code is not a source-breaking change for callers that switch over codes.
public struct ReasonCode: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let invalidURL = ReasonCode(rawValue: "invalidURL")
    public static let unsupportedScheme = ReasonCode(rawValue: "unsupportedScheme")
    public static let forbiddenAddress = ReasonCode(rawValue: "forbiddenAddress")
    public static let connectFailed = ReasonCode(rawValue: "connectFailed")
    /// The server answered with a status that is not 2xx; the message names it.
    public static let httpStatus = ReasonCode(rawValue: "httpStatus")
    public static let tooManyRedirects = ReasonCode(rawValue: "tooManyRedirects")
    /// Reset, short body, protocol error.
    public static let transferFailed = ReasonCode(rawValue: "transferFailed")
    /// A per-request timeout: connect, total, or no bytes for the stall interval.
    public static let timeout = ReasonCode(rawValue: "timeout")
    /// The batch deadline came first.
    public static let deadlineExceeded = ReasonCode(rawValue: "deadlineExceeded")
    public static let sizeLimitExceeded = ReasonCode(rawValue: "sizeLimitExceeded")
    public static let unsupportedType = ReasonCode(rawValue: "unsupportedType")
    public static let corruptMedia = ReasonCode(rawValue: "corruptMedia")
    public static let emptyBody = ReasonCode(rawValue: "emptyBody")
    public static let pixelLimitExceeded = ReasonCode(rawValue: "pixelLimitExceeded")
    public static let cancelled = ReasonCode(rawValue: "cancelled")
    public static let ioError = ReasonCode(rawValue: "ioError")
    /// The decoder worker process handling this attachment died (a signal, or a memory, CPU or
    /// file-size limit); the message names the signal. Only this attachment fails.
    public static let decoderCrashed = ReasonCode(rawValue: "decoderCrashed")

    /// Added: the TLS handshake or the certificate check failed: an untrusted CA, a wrong host
    /// name, an expired certificate, a server offering only TLS below 1.2. The message is the
    /// verifier's own. (Until this code existed these were `connectFailed`.)
    public static let tlsFailed = ReasonCode(rawValue: "tlsFailed")

    /// Added with platform variants: the media cannot be shown on that platform at all (audio or
    /// video on Android). Used in `variants`, never as an attachment's own reason.
    public static let unsupportedOnPlatform = ReasonCode(rawValue: "unsupportedOnPlatform")

    /// Every code this version knows, in contract order.
    public static let allKnown: [ReasonCode] = [
        .invalidURL, .unsupportedScheme, .forbiddenAddress, .connectFailed, .httpStatus,
        .tooManyRedirects, .transferFailed, .timeout, .deadlineExceeded, .sizeLimitExceeded,
        .unsupportedType, .corruptMedia, .emptyBody, .pixelLimitExceeded, .cancelled, .ioError,
        .decoderCrashed, .tlsFailed, .unsupportedOnPlatform,
    ]

    /// The descriptor status a code implies (fixed by the contract).
    public var status: AttachmentDescriptor.Status {
        switch self {
        case .invalidURL, .unsupportedScheme, .forbiddenAddress, .sizeLimitExceeded,
             .unsupportedType, .corruptMedia, .emptyBody, .pixelLimitExceeded, .decoderCrashed, .unsupportedOnPlatform:
            return .rejected
        case .timeout, .deadlineExceeded:
            return .timedOut
        default:
            return .failed
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The library's one (code, message) type, by its short name.
typealias Reason = AttachmentDescriptor.Reason
