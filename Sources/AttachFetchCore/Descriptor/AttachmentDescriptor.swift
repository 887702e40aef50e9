/// What happened to one input URL. Encoded as JSON, this is a public contract: fields are only
/// ever added. Optional fields are omitted from the JSON when they are not known.
public struct AttachmentDescriptor: Codable, Sendable, Equatable {
    /// The outcome: `ready`, or `rejected`, `failed` or `timedOut` with a ``AttachmentDescriptor/Reason``.
    public enum Status: String, Codable, Sendable, CaseIterable {
        /// The media can be shown: `file` holds it.
        case ready
        /// The media is not acceptable (type, size, policy).
        case rejected
        /// Something went wrong on the way (the network, the origin, a decoder).
        case failed
        /// A timeout or the batch deadline ended it.
        case timedOut
    }

    /// The kind of media, from the table.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// A still or animated image.
        case image
        /// Sound only.
        case audio
        /// Moving pictures, with or without sound.
        case video
    }

    /// Why an attachment is not ready: a code from the contract's table and a message for
    /// people. The one (code, message) type of the library: the fetch, the sniffer, the policy
    /// and every decoder stage report their failures with it.
    public struct Reason: Error, Codable, Sendable, Equatable {
        /// The code, from the contract's table.
        public var code: ReasonCode
        /// A sentence for people; it never names working files.
        public var message: String
        /// Makes a reason.
        public init(code: ReasonCode, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// How a published object is encrypted, and its key. The
    /// published object is the plaintext (`bytes`, `sha256`) as RFC 8188 `aes128gcm`.
    public struct Encryption: Codable, Sendable, Equatable {
        /// The content coding: `aes128gcm`.
        public var scheme: String
        /// The 16-byte input key (RFC 8188's IKM), base64url without padding.
        public var key: String
        /// The record size the object was written with (also in its header).
        public var recordSize: Int

        /// Makes an encryption description, for example a fake in a test.
        public init(scheme: String, key: String, recordSize: Int) {
            self.scheme = scheme
            self.key = key
            self.recordSize = recordSize
        }
    }

    /// A thumbnail of the delivered media (for video, its poster frame).
    public struct Thumbnail: Codable, Sendable, Equatable {
        /// Absolute path of the thumbnail file (JPEG, or PNG when the source has alpha); empty,
        /// and absent from the JSON, when the batch kept no files (`keepingFiles: false`).
        public var file: String
        /// Width in pixels.
        public var width: Int
        /// Height in pixels.
        public var height: Int
        /// The poster frame's time in seconds (the requested thumbnail time,
        /// clamped to the duration, on the frame actually shown).
        public var time: Double?
        /// Where devices fetch the thumbnail.
        public var publishedUrl: String?
        /// The published object's size (ciphertext) ...
        public var publishedBytes: Int64?
        /// ... and its key.
        public var encryption: Encryption?

        /// Makes a thumbnail description, for example a fake in a test.
        public init(file: String, width: Int, height: Int, time: Double? = nil, publishedUrl: String? = nil) {
            self.file = file
            self.width = width
            self.height = height
            self.time = time
            self.publishedUrl = publishedUrl
        }

        private enum CodingKeys: String, CodingKey { case file, width, height, time, publishedUrl, publishedBytes, encryption }

        /// Reads a thumbnail; one without `file` (a batch that kept no files) has it empty.
        public init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            file = try fields.decodeIfPresent(String.self, forKey: .file) ?? ""
            width = try fields.decode(Int.self, forKey: .width)
            height = try fields.decode(Int.self, forKey: .height)
            time = try fields.decodeIfPresent(Double.self, forKey: .time)
            publishedUrl = try fields.decodeIfPresent(String.self, forKey: .publishedUrl)
            publishedBytes = try fields.decodeIfPresent(Int64.self, forKey: .publishedBytes)
            encryption = try fields.decodeIfPresent(Encryption.self, forKey: .encryption)
        }

        /// Writes a thumbnail; an empty `file` is left out.
        public func encode(to encoder: any Encoder) throws {
            var fields = encoder.container(keyedBy: CodingKeys.self)
            // Optional in the contract (openapi.json's schemas are written from these calls).
            try fields.encodeIfPresent(file.isEmpty ? nil : file, forKey: .file)
            try fields.encode(width, forKey: .width)
            try fields.encode(height, forKey: .height)
            try fields.encodeIfPresent(time, forKey: .time)
            try fields.encodeIfPresent(publishedUrl, forKey: .publishedUrl)
            try fields.encodeIfPresent(publishedBytes, forKey: .publishedBytes)
            try fields.encodeIfPresent(encryption, forKey: .encryption)
        }
    }

    /// What was done to the downloaded bytes to make the delivered file.
    public enum Transform: String, Codable, Sendable, CaseIterable {
        /// Converted to another format: WebP/HEIC/AVIF to JPEG, PNG or GIF; an oversize PNG to
        /// JPEG; an oversize animated GIF to H.264 in MPEG-4; video iOS cannot play to H.264 and
        /// AAC in MPEG-4; sound it cannot play to AAC in MPEG-4 audio.
        case transcoded
        /// Scaled down to fit the size limit.
        case downscaled
        /// Encoded again in the same format, to fit the size limit.
        case reencoded
        /// Moved into another container without re-encoding: QuickTime, 3GPP, a transport
        /// stream or Matroska into MPEG-4, AAC in ADTS into MPEG-4 audio, HEVC tagged `hev1`
        /// re-tagged `hvc1`.
        case remuxed
        /// Audio or video cut short to fit the size limit or the deadline (the first
        /// `duration` seconds).
        case trimmed
        /// Cut to a 2:1 picture around what matters (an Android variant of an image, or
        /// of a video's poster, whose shape is not about 2:1).
        case cropped
        /// Made from what of the source could be decoded. The source's decoder reported
        /// errors (a damaged packet, a frame it could not rebuild); what it said is in
        /// `sourceDamage`. The result still agrees with the source's length.
        case partial
        /// The pixels turned as the source's (first) EXIF orientation says, and no tag
        /// left: a JPEG whose EXIF blocks stated different orientations (readers differ on
        /// which counts), turned losslessly (its blocks moved, not encoded again) where whole
        /// blocks allow, else encoded again (`reencoded` too); or an Android variant turned
        /// losslessly, since Android ignores the tag.
        case oriented
    }

    /// What the media is for in a notification (set when it came from a push payload).
    public enum Role: String, Codable, Sendable, CaseIterable {
        /// A media attachment (UNNotificationAttachment).
        case attachment
        /// A communication notification's sender avatar.
        case avatar
    }

    /// Where the result came from when results are shared.
    public enum CacheStatus: String, Codable, Sendable, CaseIterable {
        /// This request did the work (downloaded and processed).
        case miss
        /// A finished result that was still fresh was reused; nothing was downloaded.
        case hit
        /// A stale result was revalidated with the origin (304 Not Modified) and reused.
        case revalidated
        /// Another request for the same URL and options was already under way; its result was shared.
        case coalesced
        /// Another replica's result, read from the object
        /// store (the shared result cache); nothing was downloaded from the origin.
        case shared
    }

    /// The caller's identifier, or `attachment-<index>`.
    public var identifier: String
    /// The URL exactly as given.
    public var url: String
    /// The URL after redirects, when a request was made.
    public var finalUrl: String?
    /// `ready`, `rejected`, `failed` or `timedOut`.
    public var status: Status
    /// Absent when `status` is `ready`.
    public var reason: Reason?
    /// Absolute path of the saved attachment; only when `ready`.
    public var file: String?
    /// The type decided from the bytes (canonical form), never from the URL or headers.
    public var mimeType: String?
    /// The server's Content-Type, kept for diagnosis only.
    public var declaredMimeType: String?
    /// Image, audio or video, from the table.
    public var kind: Kind?
    /// The Uniform Type Identifier, from the table.
    public var uti: String?
    /// The saved file's extension, from the table.
    public var fileExtension: String?
    /// Size of the saved (delivered) file.
    public var bytes: Int64?
    /// Lower-case hex SHA-256 of the saved bytes.
    public var sha256: String?
    /// Pixel size of the delivered image or video as displayed (EXIF orientation, rotation and
    /// sample aspect ratio applied).
    public var width: Int?
    /// Pixel height, as displayed.
    public var height: Int?
    /// The thumbnail; only when `ready`.
    public var thumbnail: Thumbnail?
    /// How long each step took, in milliseconds.
    public var timings: Timings
    /// The media's role, ...
    public var role: Role?
    /// ... the UNNotificationAttachment options the payload asked for, ready to pass through, ...
    public var options: AttachmentOptions?
    /// ... and where in the payload the URL was found.
    public var payloadPath: String?
    /// The downloaded original, as libmagic typed it, ...
    public var sourceMimeType: String?
    /// ... its size in bytes, ...
    public var sourceBytes: Int64?
    /// ... and its pixel size as displayed (images). Equal to the delivered values when
    /// `transforms` is empty.
    public var sourceWidth: Int?
    /// The original's pixel height, as displayed.
    public var sourceHeight: Int?
    /// What the source's decoders reported, in their words,
    /// with how many packets or frames did not decode.
    public var sourceDamage: String?
    /// What was done to the original, in order; empty when it is delivered as downloaded.
    public var transforms: [Transform]?
    /// Seconds, the streams' length (an MPEG-4
    /// file's from its samples when its header says otherwise), ...
    public var duration: Double?
    /// What an MPEG-4 file's header claimed, when it differs from its samples' length
    /// (`duration`) by more than half a second.
    public var statedDuration: Double?
    /// ... and the codecs of the streams used ("h264", "aac").
    public var videoCodec: String?
    /// The source's audio codec where the audio was re-encoded (`transforms` has
    /// `transcoded`), as people name it ("Opus", "FLAC"); `audioCodec` is the delivered one.
    public var sourceAudioCodec: String?
    /// The source's video codec where the video was re-encoded ("VP9", "AV1");
    /// `videoCodec` is the delivered one (`h264`).
    public var sourceVideoCodec: String?
    /// The audio stream's codec ("aac").
    public var audioCodec: String?
    /// Whether App Transport Security would load it without an
    /// exception, and why not.
    public var ats: ATSVerdict?
    /// Whether this request did the work, shared it, or reused it.
    public var cache: CacheStatus?
    /// Where devices fetch the delivered file.
    public var publishedUrl: String?
    /// The published object's size (the ciphertext; `bytes`
    /// stays the plaintext's) ...
    public var publishedBytes: Int64?
    /// ... and how it is encrypted, with its key. Absent when publishing is not encrypted.
    public var encryption: Encryption?
    /// Per platform (`android`), its own file when the delivered file
    /// breaks its limits, or why it has none. Only platforms whose file differs are listed.
    public var variants: [String: Variant]?
    /// The steps the batch deadline cut short on this
    /// attachment, named as in `timings` — `thumbnail` (an image delivered without one, and so
    /// without the full decode that catches a truncated or corrupt image), `probe` (audio or
    /// video delivered as sniffed: no duration, codecs or poster), `variants` (a platform's
    /// variant missing). Absent when the deadline cut nothing short. Such a result is never
    /// cached: the next request for the URL, with its own deadline, does the work again.
    public var skippedAtDeadline: [String]?
    /// The square (in pixels) of the delivered image, or of a video's
    /// poster, that iOS should show as the attachment's thumbnail, in the unit square, chosen
    /// by the request's crop (attention by default) or centred on its focus point. Absent when
    /// the caller gave a `clip` (which wins) or asked for no crop.
    public var thumbnailClip: ClippingRectangle?

    /// Makes a descriptor with the required fields; set the others as needed, for example for a
    /// fake in a test.
    public init(identifier: String, url: String, status: Status, reason: Reason? = nil, timings: Timings) {
        self.identifier = identifier
        self.url = url
        self.status = status
        self.reason = reason
        self.timings = timings
    }
}
