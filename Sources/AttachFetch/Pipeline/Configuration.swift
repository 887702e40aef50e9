import Foundation

/// How an `AttachmentPipeline` behaves. Every default below is the documented one.
public struct AttachFetchConfiguration: Sendable {
    /// Per-request timeouts. Each is clipped to what is left of the batch deadline.
    public struct Timeout: Sendable {
        /// Time to establish the TCP (and TLS) connection. Default 5 s.
        public var connect: Duration = .seconds(5)
        /// Time for the whole request, redirects included. Default 10 s.
        public var request: Duration = .seconds(10)
        /// Once connected, no bytes for this long counts as a timeout. Default 3 s.
        public var stall: Duration = .seconds(3)

        /// Makes the timeouts; each default is the documented one.
        public init(connect: Duration = .seconds(5), request: Duration = .seconds(10), stall: Duration = .seconds(3)) {
            self.connect = connect
            self.request = request
            self.stall = stall
        }

        /// The timeouts as the transfer layer takes them.
        package var settings: TransferTimeouts { TransferTimeouts(connect: connect, request: request, stall: stall) }
    }

    /// The per-host circuit breaker: after `failures` failures in a row (connect failures and
    /// refusals, timeouts, TLS failures, 5xx answers) a host's transfers end at once
    /// (`originUnavailable`) for `cooldown`; then one request probes it, and its success closes
    /// the breaker, its failure opens it again. Per pipeline.
    public struct CircuitBreaker: Sendable, Equatable {
        /// Failures in a row that open a host's breaker. Default 5, as Envoy's consecutive-5xx
        /// outlier detection: one or two failures happen to healthy CDNs; five in a row, with
        /// the per-host cap, is a host that has stopped answering.
        public var failures = 5
        /// How long an open breaker leaves the host alone. Default 30 s, Envoy's base ejection
        /// time: about one Notification Service Extension's budget, so that a sick host is
        /// asked again once per budget, not by every notification.
        public var cooldown: Duration = .seconds(30)

        /// Makes the settings; each default is the documented one.
        public init(failures: Int = 5, cooldown: Duration = .seconds(30)) {
            self.failures = failures
            self.cooldown = cooldown
        }
    }

    /// Per-request timeouts: connect 5 s, request 10 s, stall 3 s by default.
    public var timeout = Timeout()
    /// Per-host circuit breaking: 5 failures in a row, 30 s cool-down by default.
    public var breaker = CircuitBreaker()
    /// What the pipeline measures its own time by: batch deadlines (and the deadline it
    /// enforces on queued and running transfers, Retry-After waits and object-store requests),
    /// cache freshness, leases and breaker cool-downs. Default `.system`, the monotonic clock;
    /// tests give a clock they move by hand. libcurl's timeouts, the stall timer and the
    /// descriptors' timings are real time whatever this is.
    public var clock: AttachFetchClock = .system
    /// Largest body per kind: image 10 MiB, audio 5 MiB, video 50 MiB, image source 40 MiB by default.
    public var sizeLimits = SizeLimits()
    /// The most transfers running at once, shared by every batch and host on the same
    /// pipeline. Default 1024. A transfer costs a socket and a temporary file and mostly waits
    /// on the network, so this is sized for origins 20–300 ms away, not by cores (decoding has
    /// its own pools, `thumbnailThreads` and `probeThreads`). With `transferConcurrency`
    /// `.adaptive` (the default) transfers also start no faster than the decoders can use them;
    /// with `.fixed`, up to this many start at once. The measured sweep is in
    /// docs/performance.md.
    public var maxConcurrentTransfers = 1024
    /// How transfers start, up to `maxConcurrentTransfers` running. Default `.adaptive`.
    public var transferConcurrency: TransferConcurrency = .adaptive
    /// How many of one batch's attachments are worked on at once; the others wait their turn
    /// as a request alone (about 60 KiB of task state each once started). Default 256: a batch
    /// of 10,000 then peaks within 1.5x of one of 300 even in a debug build, whose async frames
    /// are larger (with 512, 1.44-1.60x there). The cost: a batch of 300 URLs from an origin
    /// 300 ms away takes a second round trip for its last 44 (1.10 s; 0.90 s with 512). Across the
    /// pipeline's batches, four times this at most (1,024). With `.fixed` transfers, a batch may still run
    /// `maxConcurrentTransfers` at once when that is more.
    public var maxAttachmentsInFlight = 256

    /// How transfers start.
    public struct TransferConcurrency: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// Up to 16 whatever the pace; more at twice the pace the decoders finish jobs, up to 16
        /// at once after a pause. By Little's law as many run as that pace times a transfer's
        /// duration: about 16 for an origin 0 ms away (hundreds would only contend for the file
        /// system), hundreds for one 100–300 ms away. Before the decoders finish a job, 2 ms a
        /// job per thread is assumed.
        public static let adaptive = TransferConcurrency("adaptive")
        /// Up to `maxConcurrentTransfers` at once, at any pace (the CLI's `--max-concurrency`).
        public static let fixed = TransferConcurrency("fixed")

        public var description: String { name }
    }
    /// Transfers (and so connections) to one host at once: scheme, name and port. Default 512:
    /// at 300 ms, 300 small images from one CDN took 1.04 s with 512 and 1.33 s with 256 (a
    /// second wave, one more round trip); half the slots, so that another host always finds
    /// room. When
    /// transfers to several hosts wait, free slots go to the host with the fewest running.
    public var maxHostConnections = 512
    /// Bytes the running transfers may hold in temporary files at once. Default 1 GiB. A body
    /// reserves its declared length (or the largest size limit while it declares none and its
    /// kind is unknown) when it starts, and waits, paused, while that does not fit. At least
    /// `sizeLimits.largest`, so that any one body fits.
    public var maxInflightBytes: Int64 = 1 << 30
    /// Redirects followed per request. Default 5.
    public var maxRedirects = 5
    /// Deadline of a batch when the caller gives none. Default 25 s (an iOS service extension
    /// has about 30 s in all).
    public var defaultDeadline: Duration = .seconds(25)
    /// Request timeout for avatars (communication notifications), clipped like the others.
    /// Default 5 s.
    public var avatarTimeout: Duration = .seconds(5)
    /// Longest edge of a thumbnail, in pixels. Default 320.
    public var thumbnailMaxEdge = 320
    /// Images with more pixels than this are refused before decoding. Default 50 megapixels.
    public var maxImagePixels = 50_000_000
    /// Progressive JPEGs and interlaced PNGs cannot be shrunk while loading, so decoding them
    /// costs memory and time in proportion to their full size (measured here: 16 MP took
    /// 0.25 s and 84 MB, 50 MP 1.1 s and 184 MB, against 0.33 s and 40 MB for a 50 MP
    /// baseline JPEG). They get this lower cap. Default 16 megapixels.
    public var maxProgressivePixels = 16_000_000
    /// An animated GIF with more frames than this is refused. Default 500.
    public var maxAnimationFrames = 500
    /// An animated GIF whose frames hold more pixels than this in all is refused (a device
    /// decodes every frame to play it). Default 100 megapixels.
    public var maxAnimationPixels = 100_000_000
    /// Deliver media that will show (default on): WebP, HEIC/HEIF and AVIF become JPEG (PNG
    /// with transparency, GIF for an animation that fits); an image over the image limit (up
    /// to `sizeLimits.imageSource`) is re-encoded and downscaled until it fits. Off: strict
    /// accept-or-reject by the table and the limits.
    public var normalize = true
    /// Re-encode sound and video iOS cannot play (default on; only while `normalize` is on):
    /// Ogg, FLAC, AC-3, WMA, Monkey's Audio, Musepack and DSF into AAC; WebM, Matroska with
    /// VP9 or AV1, Theora, WMV and Flash Video into H.264 and AAC; and video in MPEG-4 that iOS
    /// cannot play (H.264 above High or not 8-bit 4:2:0, AV1, VP9) into H.264. Off: those are
    /// refused (`unsupportedType`); HEVC tagged `hev1` is still re-tagged (no re-encoding).
    public var transcode = true
    /// The longest edge, in pixels, of video that is re-encoded (WebM, Matroska). Default 1280:
    /// sharp on a phone's notification and fast to encode (720p-class). From 16 to 4096.
    public var transcodeMaxLongEdge = 1280
    /// Encodings tried at most to fit an oversize image (each one a full decode and encode).
    /// Default 4.
    public var maxNormalizeAttempts = 4
    /// Video frames decoded at most to reach a poster frame after seeking to the keyframe
    /// before it (a keyframe interval is rarely over 300 frames). Default 600.
    public var maxVideoDecodeFrames = 600
    /// Off by default: loopback, private, link-local and similar destinations are refused
    /// (`forbiddenAddress`). Turn on for tests and demos on one machine.
    public var allowPrivateNetwork = false
    /// CIDR ranges always allowed (checked after `deniedRanges`), e.g. one internal CDN.
    public var allowedRanges: [CIDRRange] = []
    /// CIDR ranges always refused, even when global or otherwise allowed.
    public var deniedRanges: [CIDRRange] = []

    /// The destination rules these settings make.
    public var addressPolicy: AddressPolicy {
        AddressPolicy(allowPrivateNetwork: allowPrivateNetwork, allowedRanges: allowedRanges, deniedRanges: deniedRanges)
    }
    /// Where batch working directories are made. Decoder workers write only in the pipeline's own
    /// directory here (`.attach-fetch-workers-XXXXXX`, 0700, removed at shutdown). Default: TMPDIR.
    public var temporaryDirectory: String = FileManager.default.temporaryDirectory.path
    /// Threads that make thumbnails. Default: the number of active cores.
    public var thumbnailThreads = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Threads that probe audio and video with FFmpeg and make video posters, apart from the
    /// image threads so that neither kind waits behind the other. Default 1: a video decoder
    /// holds several full frames, so few run at once (peak memory).
    public var probeThreads = 1

    /// Where the C decoders (libvips, libheif, libjpeg-turbo, FFmpeg, libswscale) run.
    public enum DecoderIsolation: Sendable, Equatable {
        /// In decoder worker processes, one per thumbnail and probe thread, started once and
        /// reused (the default): a decoder's crash, runaway memory or endless loop costs only
        /// its own attachment (`decoderCrashed`).
        case processes
        /// On the pipeline's own threads, in this process: no process to start, but one
        /// malformed file can crash or exhaust the whole process. Unsafe for untrusted input.
        case none
    }

    /// Default `.processes`.
    public var isolation: DecoderIsolation = .processes
    /// The decoder worker executable. Default nil: `attach-fetch-decoder` beside the running
    /// executable (SwiftPM builds it into the same directory as `attach-fetch`).
    public var decoderExecutable: String?
    /// How long a worker no longer needed may take to exit on its own before it is killed. Default
    /// 0, at once; the instruction-count guard lets its workers exit so callgrind writes their counts.
    package var decoderExitGraceMilliseconds = 0
    /// Data memory (heap and private mappings, RLIMIT_DATA) each image worker may hold. Default 512 MiB.
    public var decoderMemoryLimit = 512 << 20
    /// The same for the workers that probe, remux and transcode audio and video. Default 1 GiB: a 4K AV1
    /// transcode holds 525-560 MB (4K frames, libx264's lookahead, thread stacks count as data).
    public var videoDecoderMemoryLimit = 1 << 30
    /// CPU seconds a worker may spend on one job before the pipeline ends it (read every 100 ms);
    /// a transcode may also spend its budget's seconds on every core. A worker's own `RLIMIT_CPU`,
    /// a backstop it cannot raise, is 30 times this for its life (600 s at least). Default 20.
    public var decoderCPUSecondsPerJob = 20
    /// Jobs a worker is given before it is replaced: one a file took over answers no more. Default 1,000.
    public var decoderJobsPerWorker = 1_000
    /// Whether workers may run where the kernel has no Landlock (before Linux 5.13, many
    /// containers): they then keep to no directory (docs/security.md says what such a host
    /// loses). Default false: the pipeline does not start there, and a worker is refused.
    public var decoderRunsWithoutLandlock = false
    /// The kernel's Landlock ABI as the pipeline takes it; nil: the running kernel's. Tests set 0.
    package var assumedKernelLandlockABI: Int32?
    /// Largest file a worker may write (RLIMIT_FSIZE). While the pipeline converts, at least what
    /// a converted video may be (the video limit and 1 MiB of index: `workerFileSizeLimit`). Default 64 MiB.
    public var decoderFileSizeLimit = 64 << 20
    /// Whether the image threads' workers start with the pipeline. Default true: no image waits
    /// for one. False: each at its thread's first image. Probe workers start at the first audio or video.
    public var imageWorkersStartWithPipeline = true

    /// Certificates trusted in addition to the system's store (never replacing it), as PEM text
    /// (each string one or more), for media on hosts with a private CA. Default: none.
    public var trustedCertificates: [String] = []

    /// An egress proxy every transfer goes through by HTTP CONNECT (for example Stripe's
    /// Smokescreen), as `http://host:port` or `https://host:port`. Default nil: transfers go
    /// direct. Proxies from the environment (`http_proxy`, ...) are ignored either way. The
    /// proxy's own address must pass the address policy (allow its range); URLs whose host is a
    /// literal address the policy refuses are refused before the proxy is asked; the addresses
    /// names resolve to are then the proxy's to police.
    public var proxy: String?

    /// The platforms whose devices will show the media. For each one whose limits the
    /// delivered file breaks, a variant that fits is made (`variants` in the descriptor).
    /// Default `[.ios]`: the delivered file is made for iOS, and nothing else.
    public var platforms: Set<Platform> = [.ios]

    /// Where ready files are published for devices to fetch, content-addressed. Default nil.
    public var publish: Publishing?
    /// Where ready files are published when they go to an S3-compatible object store
    /// (content-addressed, like `publish`), which with `cache` set is also the result cache that
    /// replicas share. Default nil. Not together with `publish`.
    public var objectStore: ObjectStorePublishing?

    /// Publishing encrypted (RFC 8188 `aes128gcm`, a key per content in the descriptor).
    /// Default nil: published files are plaintext. Needs `publish` or `objectStore`.
    public var mediaEncryption: MediaEncryption?

    /// Keeping finished results for reuse. Default nil: off (requests for the same URL and
    /// options that run at the same time still share one download).
    public var cache: ResultCaching?

    /// The documented defaults.
    public init() {}

    /// Checks the values for sense; the pipeline's initialiser calls it.
    public func validate() throws(AttachFetchError) {
        func positive(_ d: Duration) -> Bool { d > .zero }
        guard positive(timeout.connect), positive(timeout.request), positive(timeout.stall) else {
            throw .invalidConfiguration("timeouts must be greater than zero")
        }
        guard positive(defaultDeadline) else { throw .invalidConfiguration("the default deadline must be greater than zero") }
        guard maxConcurrentTransfers >= 1 else { throw .invalidConfiguration("maxConcurrentTransfers must be at least 1") }
        guard maxAttachmentsInFlight >= 1 else { throw .invalidConfiguration("maxAttachmentsInFlight must be at least 1") }
        guard breaker.failures >= 1 else { throw .invalidConfiguration("breaker.failures must be at least 1, not \(breaker.failures)") }
        guard breaker.cooldown > .zero else { throw .invalidConfiguration("breaker.cooldown must be greater than zero") }
        guard maxHostConnections >= 1 else { throw .invalidConfiguration("maxHostConnections must be at least 1") }
        guard maxInflightBytes >= sizeLimits.largest else {
            throw .invalidConfiguration("maxInflightBytes must be at least the largest size limit (\(sizeLimits.largest) bytes), not \(maxInflightBytes)")
        }
        guard maxRedirects >= 0 else { throw .invalidConfiguration("maxRedirects must not be negative") }
        guard TranscodeSettings.longEdges.contains(transcodeMaxLongEdge) else {
            throw .invalidConfiguration("transcodeMaxLongEdge must be from \(TranscodeSettings.longEdgesText) pixels, not \(transcodeMaxLongEdge)")
        }
        guard sizeLimits.image > 0, sizeLimits.audio > 0, sizeLimits.video > 0, sizeLimits.imageSource > 0 else {
            throw .invalidConfiguration("size limits must be greater than zero")
        }
        guard maxImagePixels >= 1, maxProgressivePixels >= 1, maxAnimationPixels >= 1 else { throw .invalidConfiguration("pixel limits must be at least 1") }
        let counts = [("thumbnailMaxEdge", thumbnailMaxEdge), ("maxAnimationFrames", maxAnimationFrames), ("maxNormalizeAttempts", maxNormalizeAttempts),
                      ("maxVideoDecodeFrames", maxVideoDecodeFrames), ("thumbnailThreads", thumbnailThreads), ("probeThreads", probeThreads),
                      ("decoderCPUSecondsPerJob", decoderCPUSecondsPerJob)]
        for (name, value) in counts where value < 1 { throw .invalidConfiguration("\(name) must be at least 1") }
        for (name, value) in [("decoderMemoryLimit", decoderMemoryLimit), ("videoDecoderMemoryLimit", videoDecoderMemoryLimit)] where value < 32 << 20 {
            throw .invalidConfiguration("\(name) must be at least 32 MiB")
        }
        guard decoderFileSizeLimit >= 1 else { throw .invalidConfiguration("decoderFileSizeLimit must be at least 1 byte") }
        if let proxy {
            let scheme = proxy.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
            guard scheme == "http" || scheme == "https", URLCheck.problem(with: proxy) == nil else {
                throw .invalidConfiguration("the proxy must be an http:// or https:// URL, not '\(proxy)'")
            }
        }
        guard !platforms.isEmpty else { throw .invalidConfiguration("platforms must name at least one platform") }
        try publish?.validate()
        try objectStore?.validate()
        if publish != nil && objectStore != nil {
            throw .invalidConfiguration("publish to a directory or to an object store, not both")
        }
        try cache?.validate()
        if let mediaEncryption {
            try mediaEncryption.validate()
            guard publish != nil || objectStore != nil else {
                throw .invalidConfiguration("mediaEncryption encrypts what is published: it needs publish or objectStore")
            }
        }
        for (index, pem) in trustedCertificates.enumerated() where PEMCertificates.count(in: pem) == 0 {
            throw .invalidConfiguration("trustedCertificates[\(index)] holds no PEM certificate")
        }
    }
}
