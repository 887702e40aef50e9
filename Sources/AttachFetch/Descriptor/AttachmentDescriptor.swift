/// What happened to one input URL. Encoded as JSON, this is a public contract: fields are only
/// ever added. Optional fields are omitted from the JSON when they are not known.
public struct AttachmentDescriptor: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable {
        case ready, rejected, failed, timedOut
    }

    public enum Kind: String, Codable, Sendable {
        case image, audio, video
    }

    /// Why an attachment is not ready: a code from the contract's table and a message for
    /// people. The one (code, message) type of the library: the fetch, the sniffer, the policy
    /// and every decoder stage report their failures with it.
    public struct Reason: Error, Codable, Sendable, Equatable {
        public var code: ReasonCode
        public var message: String
        public init(code: ReasonCode, message: String) {
            self.code = code
            self.message = message
        }
    }

    public struct Thumbnail: Codable, Sendable, Equatable {
        /// Absolute path of the thumbnail file (JPEG, or PNG when the source has alpha).
        public var file: String
        public var width: Int
        public var height: Int
        /// Added for video: the poster frame's time in seconds (the requested thumbnail time,
        /// clamped to the duration, on the frame actually shown).
        public var time: Double?
        /// Added for publishing: where devices fetch the thumbnail.
        public var publishedUrl: String?

        public init(file: String, width: Int, height: Int, time: Double? = nil, publishedUrl: String? = nil) {
            self.file = file
            self.width = width
            self.height = height
            self.time = time
            self.publishedUrl = publishedUrl
        }
    }

    /// What was done to the downloaded bytes to make the delivered file.
    public enum Transform: String, Codable, Sendable {
        /// Converted to another format (WebP/HEIC/AVIF to JPEG, PNG or GIF; an oversize PNG to JPEG).
        case transcoded
        /// Scaled down to fit the size limit.
        case downscaled
        /// Encoded again in the same format, to fit the size limit.
        case reencoded
        /// Moved into another container without re-encoding (QuickTime or 3GPP to MPEG-4).
        case remuxed
    }

    /// What the media is for in a notification (set when it came from a push payload).
    public enum Role: String, Codable, Sendable {
        /// A media attachment (UNNotificationAttachment).
        case attachment
        /// A communication notification's sender avatar.
        case avatar
    }

    /// Where the result came from when results are shared (added with coalescing and caching).
    public enum CacheStatus: String, Codable, Sendable {
        /// This request did the work (downloaded and processed).
        case miss
        /// A finished result that was still fresh was reused; nothing was downloaded.
        case hit
        /// A stale result was revalidated with the origin (304 Not Modified) and reused.
        case revalidated
        /// Another request for the same URL and options was already under way; its result was shared.
        case coalesced
    }

    /// A platform's own file, made when the delivered file breaks that platform's limits.
    public struct Variant: Codable, Sendable, Equatable {
        public enum Status: String, Codable, Sendable {
            /// The platform cannot show this kind of media at all (not a failure of the attachment).
            case unsupported
            /// The variant could not be made (deadline, a file that would not fit): it is missing.
            case failed
        }
        /// Absent for a variant that was made.
        public var status: Status?
        public var reason: Reason?
        /// Absolute path of the variant file.
        public var file: String?
        public var bytes: Int64?
        public var sha256: String?
        public var mimeType: String?
        public var width: Int?
        public var height: Int?
        public var transforms: [Transform]?
        public var publishedUrl: String?

        public init(status: Status? = nil, reason: Reason? = nil) {
            self.status = status
            self.reason = reason
        }
    }

    /// Milliseconds. `total` is measured from the start of the batch; the others are known
    /// only when that step ran.
    public struct Timings: Codable, Sendable, Equatable {
        public var total: Int
        public var connect: Int?
        public var firstByte: Int?
        public var download: Int?
        public var thumbnail: Int?
        /// Added: converting an image to fit (normalizing), and probing audio or video.
        public var normalize: Int?
        public var probe: Int?
        /// Added with platforms: making the platform variants.
        public var variants: Int?
        /// Added with the service: waiting for a transfer slot (`maxConcurrentTransfers`).
        public var queued: Int?

        public init(total: Int, connect: Int? = nil, firstByte: Int? = nil, download: Int? = nil,
                    thumbnail: Int? = nil, normalize: Int? = nil, probe: Int? = nil, variants: Int? = nil) {
            self.variants = variants
            self.total = total
            self.connect = connect
            self.firstByte = firstByte
            self.download = download
            self.thumbnail = thumbnail
            self.normalize = normalize
            self.probe = probe
        }
    }

    /// The caller's identifier, or `attachment-<index>`.
    public var identifier: String
    /// The URL exactly as given.
    public var url: String
    /// The URL after redirects, when a request was made.
    public var finalUrl: String?
    public var status: Status
    /// Absent when `status` is `ready`.
    public var reason: Reason?
    /// Absolute path of the saved attachment; only when `ready`.
    public var file: String?
    /// The type decided from the bytes (canonical form), never from the URL or headers.
    public var mimeType: String?
    /// The server's Content-Type, kept for diagnosis only.
    public var declaredMimeType: String?
    public var kind: Kind?
    public var uti: String?
    public var fileExtension: String?
    public var bytes: Int64?
    /// Lower-case hex SHA-256 of the saved bytes.
    public var sha256: String?
    /// Pixel size of the delivered image or video as displayed (EXIF orientation, rotation and
    /// sample aspect ratio applied).
    public var width: Int?
    public var height: Int?
    public var thumbnail: Thumbnail?
    public var timings: Timings
    /// Added for push payloads: the media's role, ...
    public var role: Role?
    /// ... the UNNotificationAttachment options the payload asked for, ready to pass through, ...
    public var options: AttachmentOptions?
    /// ... and where in the payload the URL was found.
    public var payloadPath: String?
    /// Added for normalizing: the downloaded original, as libmagic typed it, ...
    public var sourceMimeType: String?
    /// ... its size in bytes, ...
    public var sourceBytes: Int64?
    /// ... and its pixel size as displayed (images). Equal to the delivered values when
    /// `transforms` is empty.
    public var sourceWidth: Int?
    public var sourceHeight: Int?
    /// What was done to the original, in order; empty when it is delivered as downloaded.
    public var transforms: [Transform]?
    /// Added for audio and video (FFmpeg's probe): seconds, when the container states it, ...
    public var duration: Double?
    /// ... and the codecs of the streams used ("h264", "aac").
    public var videoCodec: String?
    public var audioCodec: String?
    /// Added for http(s) media: whether App Transport Security would load it without an
    /// exception, and why not.
    public var ats: ATSVerdict?
    /// Added with coalescing and caching: whether this request did the work, shared it, or reused it.
    public var cache: CacheStatus?
    /// Added with publishing: where devices fetch the delivered file.
    public var publishedUrl: String?
    /// Added with platforms: per platform (`android`), its own file when the delivered file
    /// breaks its limits, or why it has none. Only platforms whose file differs are listed.
    public var variants: [String: Variant]?
    /// Added with the time contract's details: the steps the batch deadline cut short on this
    /// attachment, named as in `timings` — `thumbnail` (an image delivered without one, and so
    /// without the full decode that catches a truncated or corrupt image), `probe` (audio or
    /// video delivered as sniffed: no duration, codecs or poster), `variants` (a platform's
    /// variant missing). Absent when the deadline cut nothing short. Such a result is never
    /// cached: the next request for the URL, with its own deadline, does the work again.
    public var skippedAtDeadline: [String]?

    public init(identifier: String, url: String, status: Status, reason: Reason? = nil, timings: Timings) {
        self.identifier = identifier
        self.url = url
        self.status = status
        self.reason = reason
        self.timings = timings
    }
}
