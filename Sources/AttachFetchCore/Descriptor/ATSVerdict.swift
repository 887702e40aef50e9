/// Whether iOS App Transport Security would let an app (and its notification service
/// extension) load this media without an exception in its `NSAppTransportSecurity` dictionary.
/// Judged from the TLS session the download negotiated and from every hop of its redirects.
public struct ATSVerdict: Codable, Sendable, Equatable {
    /// One reason App Transport Security would refuse the media.
    public struct Problem: Codable, Sendable, Equatable {
        /// One of the `ATSVerdict` codes below; more may be added.
        public var code: String
        /// A sentence for people.
        public var message: String

        /// Makes a problem.
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// True when there are no problems.
    public var compliant: Bool
    /// Why it is not compliant; empty when it is.
    public var problems: [Problem]

    /// Makes a verdict; `compliant` follows from `problems`.
    public init(problems: [Problem]) {
        self.compliant = problems.isEmpty
        self.problems = problems
    }

    /// The URL is plain `http`.
    public static let insecureScheme = "insecureScheme"
    /// A redirect led to a plain `http` URL.
    public static let insecureRedirect = "insecureRedirect"
    /// The server negotiated (or offered only) TLS below 1.2.
    public static let tlsVersion = "tlsVersion"
    /// The cipher suite has no ECDHE key exchange.
    public static let cipherNotForwardSecret = "cipherNotForwardSecret"
    /// A certificate of the chain is signed with SHA-1 (or MD5).
    public static let certificateSignature = "certificateSignature"
    /// A certificate's key is below RSA 2048 or ECC 256 bits.
    public static let certificateKeySize = "certificateKeySize"
}
