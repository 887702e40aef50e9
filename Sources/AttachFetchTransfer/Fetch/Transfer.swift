import AttachFetchRuntime

/// What one download must do. Built by the pipeline, carried out by the `TransferEngine`.
package struct TransferSpec: Sendable {
    /// The batch it belongs to, for sharing transfer slots fairly between batches.
    package let batch: Int
    package let url: String
    /// The URL's scheme, host and port, lowercased: the unit of per-host caps and fairness.
    package let origin: String
    /// Where the body is streamed: an unnamed file (O_TMPFILE) made in `bodyDirectory` when
    /// the transfer starts, or where the file system has none, `bodyPath`, created with O_EXCL.
    /// Mode 0600 either way.
    package let bodyPath: String
    package var bodyDirectory: String? = nil
    /// What the transfer runs under: no part of it may run past its deadline, which shared
    /// work may move later while the transfer runs.
    package let runningUnder: Batch
    package var deadline: ContinuousClock.Instant { runningUnder.deadline }
    package let timeout: TransferTimeouts
    package let sizeLimits: MediaSizeLimits
    package let maxRedirects: Int
    package let addressPolicy: AddressPolicy
    /// Avatars: anything but an image is refused at the first chunk.
    package let imagesOnly: Bool
    /// Convertible images are admitted, and images may grow to the source limit.
    package let normalize: Bool
    /// With `normalize`: sound and video that must be re-encoded (Ogg, FLAC, WebM) are admitted.
    package var transcode = true
    /// Certificates trusted besides the system's, when the configuration adds some.
    package let trustStore: TrustStore?
    /// The egress proxy (HTTP CONNECT), when one is configured.
    package let proxy: String?
    /// Revalidating a cached result: the conditional request's validators (a 304 is then
    /// `notModified`, not a failure).
    package var validators: CacheValidators? = nil

    package init(batch: Int, url: String, origin: String, bodyPath: String, bodyDirectory: String? = nil,
                 runningUnder: Batch, timeout: TransferTimeouts, sizeLimits: MediaSizeLimits, maxRedirects: Int,
                 addressPolicy: AddressPolicy, imagesOnly: Bool, normalize: Bool, transcode: Bool = true,
                 trustStore: TrustStore?, proxy: String?, validators: CacheValidators? = nil) {
        (self.batch, self.url, self.origin, self.bodyPath, self.bodyDirectory) = (batch, url, origin, bodyPath, bodyDirectory)
        (self.runningUnder, self.timeout, self.sizeLimits, self.maxRedirects) = (runningUnder, timeout, sizeLimits, maxRedirects)
        (self.addressPolicy, self.imagesOnly, self.normalize, self.transcode) = (addressPolicy, imagesOnly, normalize, transcode)
        (self.trustStore, self.proxy, self.validators) = (trustStore, proxy, validators)
    }
}

/// A transfer's timeouts: `AttachFetchConfiguration.Timeout` as the pipeline passes it.
package struct TransferTimeouts: Sendable {
    /// Time to establish the TCP (and TLS) connection.
    package var connect: Duration
    /// Time for the whole request, redirects included.
    package var request: Duration
    /// Once connected, no bytes for this long counts as a timeout.
    package var stall: Duration

    package init(connect: Duration, request: Duration, stall: Duration) {
        (self.connect, self.request, self.stall) = (connect, request, stall)
    }
}

/// What a download produced. On failure the body file has already been removed (or dropped).
package struct TransferOutcome: Sendable {
    package var failure: AttachmentDescriptor.Reason?
    /// The body, when it went to an unnamed file (`TransferSpec.bodyDirectory`) and the
    /// transfer succeeded: its working path is the body's path.
    package var body: UnnamedFile?
    /// The table row, when the bytes were sniffed as an allowed type (also on failure).
    package var mediaType: MediaType?
    /// libmagic's answer, when the bytes were sniffed (also when not allowed).
    package var sniffedMIME: String?
    package var declaredMIME: String?
    package var finalURL: String?
    package var bytes: Int64 = 0
    package var sha256: String?
    package var connectMilliseconds: Int?
    package var firstByteMilliseconds: Int?
    package var downloadMilliseconds: Int?
    /// Time waiting for a transfer slot.
    package var queuedMilliseconds: Int?
    /// True when the job ended before it got a connection slot.
    package var endedWhileQueued = false
    /// What App Transport Security would say, when a request was made.
    package var ats: ATSVerdict?
    /// The answer to a conditional request was 304 Not Modified: nothing was downloaded.
    package var notModified = false
    /// The last response's caching headers.
    package var cacheHeaders = CacheHeaders()
    /// What the origin did wrong, in words, when the failure is the origin's (for its breaker).
    var originFailure: String?
    /// A 429 or 503 answer's Retry-After, as a delay from now.
    var retryAfter: Duration?
    /// The HTTP status the origin answered, when it answered.
    package var httpStatus: Int?
    /// The HTTP version of the last response (CURLINFO_HTTP_VERSION: 2 for 1.1, 3 for 2), 0
    /// when none came.
    var httpVersion = 0

    package static func failed(_ code: ReasonCode, _ message: String) -> TransferOutcome {
        TransferOutcome(failure: .init(code: code, message: message))
    }
}
