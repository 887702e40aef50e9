extension ReasonCode {
    /// What the contract fixes for one code. `ReasonCode.contracts` is the one place each code's
    /// status, caching and breaker class are written; `allKnown`, `status`, the cache's and the
    /// breaker's sets derive from it, `contract-lists` generates the docs' tables from it and
    /// `openapi-document` openapi.json's enum.
    public struct Contract: Sendable {
        /// The code.
        public let code: ReasonCode
        /// The descriptor status it implies.
        public let status: AttachmentDescriptor.Status
        /// Whether a failure with it would come out the same if tried again now, and so is
        /// reused from the cache for `failureFreshness`. The others depend on the moment, the
        /// caller or the service, not on the media.
        public let reused: Bool
        /// Whether it counts against the origin's circuit breaker (`httpStatus` only for a 5xx
        /// answer): it says something about the origin's health.
        public let countsAgainstOrigin: Bool
        /// When it is given, in Markdown, for the docs' tables.
        public let when: String

        init(_ code: ReasonCode, _ status: AttachmentDescriptor.Status, reused: Bool, countsAgainstOrigin: Bool = false,
             when: String) {
            (self.code, self.status, self.reused, self.countsAgainstOrigin, self.when) = (code, status, reused, countsAgainstOrigin, when)
        }
    }

    /// Every code this version knows, in contract order, with what the contract fixes for it.
    /// A new code is declared above, added here, and produced where it happens; nothing else
    /// is written by hand (`contract-lists` and `openapi-document` regenerate the rest, and CI
    /// fails while it differs).
    public static let contracts: [Contract] = [
        Contract(.invalidURL, .rejected, reused: true, when: "empty, no scheme, no host, unparsable"),
        Contract(.unsupportedScheme, .rejected, reused: true, when: "anything but http or https, also on a redirect hop"),
        Contract(.forbiddenAddress, .rejected, reused: true,
                 when: "the address about to be connected to is loopback, private, link-local, ... (checked for every address libcurl connects to, so DNS names and redirects are covered)"),
        Contract(.connectFailed, .failed, reused: false, countsAgainstOrigin: true, when: "refused, unresolvable, unreachable"),
        Contract(.httpStatus, .failed, reused: true, countsAgainstOrigin: true,
                 when: "a final status that is not 2xx (the message names it); only a 5xx counts against the origin"),
        Contract(.tooManyRedirects, .failed, reused: true, when: "more than `maxRedirects`"),
        Contract(.transferFailed, .failed, reused: false, when: "reset, short body, protocol error"),
        Contract(.timeout, .timedOut, reused: false, countsAgainstOrigin: true, when: "a per-request timeout: connect, total or stall"),
        Contract(.deadlineExceeded, .timedOut, reused: false, when: "the batch deadline came first (also for requests still queued)"),
        Contract(.sizeLimitExceeded, .rejected, reused: true,
                 when: "declared or streamed size over the limit of the sniffed kind (images, and an MP3 that is cut to fit: the source limit when converting), or over the largest limit before the type is known; an MPEG-4 file over its kind's limit once its streams are known; an image that could not be fitted in `maxNormalizeAttempts`"),
        Contract(.unsupportedType, .rejected, reused: true,
                 when: "the bytes are not in the table (PDF, HTML, ...; WebP, HEIC and AVIF with converting off), or a stream's codec is not one the supported formats carry (VP9 in MP4, ...), or FFmpeg has no decoder for it at all (MPEG-H 3D audio, AC-4, VVC, ...), or the samples are encrypted (Common Encryption), or an MPEG program stream holds only audio"),
        Contract(.corruptMedia, .rejected, reused: true,
                 when: "libvips cannot decode the image in full (every frame of an animation); a PNG metadata chunk declares more than the file holds or more than 8 MiB; FFmpeg cannot read the container, finds no audio or video stream, or a stream does not decode; a transcode's output fails its check (a stream missing or ending far before the source's)"),
        Contract(.emptyBody, .rejected, reused: true, when: "a 2xx answer with no body"),
        Contract(.pixelLimitExceeded, .rejected, reused: true,
                 when: "more pixels than `maxImagePixels`, checked from the header before decoding (for HEIF/AVIF from the `ispe` boxes, before libheif sees the file), and for video from the stream and every frame"),
        Contract(.cancelled, .failed, reused: false, when: "the calling task was cancelled"),
        Contract(.ioError, .failed, reused: false,
                 when: "a file could not be written, or would overwrite an existing one; also an internal failure of a library (libcurl refusing an option other than the URL, a `curl_multi_*` call failing, an OpenSSL EVP call failing), with that library's message"),
        Contract(.decoderCrashed, .rejected, reused: true,
                 when: "the decoder worker process handling this attachment died: a signal (the message names it: `SIGSEGV`, `SIGXCPU: CPU time limit`, `SIGXFSZ: file size limit`, ...) or its memory limit, or it answered what it was not asked; only this attachment fails"),
        Contract(.tlsFailed, .failed, reused: true, countsAgainstOrigin: true,
                 when: "the TLS handshake or certificate check failed: an untrusted CA, a wrong host name, an expired certificate, a server offering only TLS below 1.2, a certificate OpenSSL refuses (SHA-1 signature, small key); the message is the verifier's own"),
        Contract(.unsupportedOnPlatform, .rejected, reused: false,
                 when: "only inside `variants`: the platform cannot show this kind at all (audio or video on Android); the attachment itself is still `ready`"),
        Contract(.publishFailed, .failed, reused: false,
                 when: "the object store refused a ready file or could not be reached, after retries within the deadline; the message names the store's error code (`AccessDenied`, `NoSuchBucket`, `ConnectionFailed`, ...), never a credential. Nothing is ever visible under a key unless it is whole"),
        Contract(.originUnavailable, .failed, reused: false,
                 when: "the URL's host failed `--breaker-failures` times in a row just before (connect failures and refusals, timeouts, TLS failures, 5xx answers), so this request was not sent; the message names the host, what failed and until when it is left alone. Transient: never cached, never shared through the object store"),
        Contract(.encryptionUnavailable, .failed, reused: false,
                 when: "the request asked for encrypted publishing (`AttachmentRequest.encrypt`) but the pipeline has no media key (`mediaEncryption`); nothing was fetched or published. The service refuses such a call with 400 instead"),
    ]
}

extension AttachmentDescriptor.Reason {
    /// The endings of the messages of a decoder ended by a limit of attach-fetch's own (the
    /// keeper's CPU allowance, the worker's CPU or file-size limit), not by the media: written
    /// where those reasons are made (`DecoderProcess`), read by the result cache.
    package static let ownLimitEndings = [cpuAllowanceEnding, dataLimitEnding] + [cpuLimitSignal, fileSizeLimitSignal].map { "(\($0))" }
    /// How a worker's message ends when it ran out of memory or threads under its data limit
    /// (`RLIMIT_DATA`), which it states before this (`FFmpeg.failure`).
    package static let dataLimitEnding = "(decoderMemoryLimit for images, videoDecoderMemoryLimit for audio and video)"
    /// How the keeper's message for a job over its CPU allowance ends.
    package static let cpuAllowanceEnding = "(decoderCPUSecondsPerJob)"
    /// How the keeper names the signals of the worker's own CPU and file-size limits.
    package static let cpuLimitSignal = "SIGXCPU: CPU time limit", fileSizeLimitSignal = "SIGXFSZ: file size limit"

    /// Whether a limit of attach-fetch's own ended the work: such a failure is reused only
    /// briefly (`ResultCaching.ownLimitFreshness`).
    package var endedByOwnLimit: Bool {
        (code == .decoderCrashed || code == .ioError) && Self.ownLimitEndings.contains { message.hasSuffix($0) }
    }
}
