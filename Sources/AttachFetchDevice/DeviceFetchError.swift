/// Why an encrypted attachment was not made ready on the device. A struct of codes, so that
/// codes can be added without breaking a caller's `switch`.
public struct DeviceFetchError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The `attach-fetch` block of the payload is not as documented.
        public static let malformedPayload = Code(rawValue: "malformedPayload")
        /// The payload's key is not the one the object was encrypted with.
        public static let wrongKey = Code(rawValue: "wrongKey")
        /// A record failed authentication: the object's bytes were altered.
        public static let authenticationFailed = Code(rawValue: "authenticationFailed")
        /// The object ended before its last record.
        public static let truncated = Code(rawValue: "truncated")
        /// Not RFC 8188 `aes128gcm`.
        public static let malformedContent = Code(rawValue: "malformedContent")
        /// The decrypted bytes' SHA-256 is not the payload's.
        public static let hashMismatch = Code(rawValue: "hashMismatch")
        /// More plaintext than the payload's `bytes` or the fetcher's `maxBytes`, a body longer
        /// than that much plaintext is encrypted to, or a record size over the 16 MiB the
        /// decoder takes.
        public static let tooLarge = Code(rawValue: "tooLarge")
        /// The server answered with a status other than 200.
        public static let httpStatus = Code(rawValue: "httpStatus")
        /// The connection failed.
        public static let transferFailed = Code(rawValue: "transferFailed")
        /// The decrypted file could not be written.
        public static let ioError = Code(rawValue: "ioError")
        /// The deadline came first.
        public static let deadlineExceeded = Code(rawValue: "deadlineExceeded")
        /// The calling task was cancelled (`serviceExtensionTimeWillExpire`).
        public static let cancelled = Code(rawValue: "cancelled")
    }

    public var code: Code
    /// A sentence for people; never key material.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
