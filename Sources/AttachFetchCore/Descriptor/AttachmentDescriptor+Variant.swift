extension AttachmentDescriptor {
    /// A platform's own file, made when the delivered file breaks that platform's limits.
    public struct Variant: Codable, Sendable, Equatable {
        /// Why a variant is missing.
        public enum Status: String, Codable, Sendable, CaseIterable {
            /// The platform cannot show this kind of media at all (not a failure of the attachment).
            case unsupported
            /// The variant could not be made (deadline, a file that would not fit): it is missing.
            case failed
        }
        /// Absent for a variant that was made.
        public var status: Status?
        /// Why the variant is missing.
        public var reason: Reason?
        /// Absolute path of the variant file.
        public var file: String?
        /// Size of the variant file.
        public var bytes: Int64?
        /// Lower-case hex SHA-256 of the variant file.
        public var sha256: String?
        /// Type of the variant file.
        public var mimeType: String?
        /// Width of the variant in pixels.
        public var width: Int?
        /// Height of the variant in pixels.
        public var height: Int?
        /// What was done to the delivered file to make the variant.
        public var transforms: [Transform]?
        /// Where devices fetch the variant, when publishing.
        public var publishedUrl: String?
        /// The published object's size (ciphertext) ...
        public var publishedBytes: Int64?
        /// ... and its key.
        public var encryption: Encryption?

        /// Makes a variant; a made one has no status.
        public init(status: Status? = nil, reason: Reason? = nil) {
            self.status = status
            self.reason = reason
        }
    }
}
