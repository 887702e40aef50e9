/// What one download must do. Built by the pipeline, carried out by the `TransferEngine`.
struct TransferSpec: Sendable {
    /// The batch it belongs to, for sharing transfer slots fairly between batches.
    let batch: Int
    let url: String
    /// The URL's scheme, host and port, lowercased: the unit of per-host caps and fairness.
    let origin: String
    /// Where the body is streamed: an unnamed file (O_TMPFILE) made in `bodyDirectory` when
    /// the transfer starts, or where the file system has none, `bodyPath`, created with O_EXCL.
    /// Mode 0600 either way.
    let bodyPath: String
    var bodyDirectory: String? = nil
    /// What the transfer runs under: no part of it may run past its deadline, which shared
    /// work may move later while the transfer runs.
    let runningUnder: Batch
    var deadline: ContinuousClock.Instant { runningUnder.deadline }
    let timeout: AttachFetchConfiguration.Timeout
    let sizeLimits: AttachFetchConfiguration.SizeLimits
    let maxRedirects: Int
    let addressPolicy: AddressPolicy
    /// Avatars: anything but an image is refused at the first chunk.
    let imagesOnly: Bool
    /// Convertible images are admitted, and images may grow to the source limit.
    let normalize: Bool
    /// With `normalize`: sound and video that must be re-encoded (Ogg, FLAC, WebM) are admitted.
    var transcode = true
    /// Certificates trusted besides the system's, when the configuration adds some.
    let trustStore: TrustStore?
    /// The egress proxy (HTTP CONNECT), when one is configured.
    let proxy: String?
    /// Revalidating a cached result: the conditional request's validators (a 304 is then
    /// `notModified`, not a failure).
    var validators: CacheValidators? = nil
}

/// What a download produced. On failure the body file has already been removed (or dropped).
struct TransferOutcome: Sendable {
    var failure: AttachmentDescriptor.Reason?
    /// The body, when it went to an unnamed file (`TransferSpec.bodyDirectory`) and the
    /// transfer succeeded: its working path is the body's path.
    var body: UnnamedFile?
    /// The table row, when the bytes were sniffed as an allowed type (also on failure).
    var mediaType: MediaType?
    /// libmagic's answer, when the bytes were sniffed (also when not allowed).
    var sniffedMIME: String?
    var declaredMIME: String?
    var finalURL: String?
    var bytes: Int64 = 0
    var sha256: String?
    var connectMilliseconds: Int?
    var firstByteMilliseconds: Int?
    var downloadMilliseconds: Int?
    /// Time waiting for a transfer slot.
    var queuedMilliseconds: Int?
    /// True when the job ended before it got a connection slot.
    var endedWhileQueued = false
    /// What App Transport Security would say, when a request was made.
    var ats: ATSVerdict?
    /// The answer to a conditional request was 304 Not Modified: nothing was downloaded.
    var notModified = false
    /// The last response's caching headers.
    var cacheHeaders = CacheHeaders()
    /// What the origin did wrong, in words, when the failure is the origin's (for its breaker).
    var originFailure: String?
    /// A 429 or 503 answer's Retry-After, as a delay from now.
    var retryAfter: Duration?
    /// The HTTP status the origin answered, when it answered.
    var httpStatus: Int?
    /// The HTTP version of the last response (CURLINFO_HTTP_VERSION: 2 for 1.1, 3 for 2), 0
    /// when none came.
    var httpVersion = 0

    static func failed(_ code: ReasonCode, _ message: String) -> TransferOutcome {
        TransferOutcome(failure: .init(code: code, message: message))
    }
}
