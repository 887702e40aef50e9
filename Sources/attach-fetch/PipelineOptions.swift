import ArgumentParser
import AttachFetch
import Foundation

/// The pipeline's settings. Every default is the library's own (`AttachFetchConfiguration()`),
/// so the command and the library cannot drift apart.
struct PipelineOptions: ParsableArguments {
    private static let library = AttachFetchConfiguration()

    @Option(help: ArgumentHelp("Seconds the whole batch may take, more than 0 and at most 3600 (serve: a request's deadline when it gives none, clipped to --max-deadline).", valueName: "SECONDS"))
    var deadline: Double = library.defaultDeadline.seconds

    @Option(help: ArgumentHelp("Seconds one request may take, redirects included; more than 0 and at most 3600.", valueName: "SECONDS"))
    var timeout: Double = library.timeout.request.seconds

    @Option(name: .customLong("connect-timeout"), help: ArgumentHelp("Seconds to connect; more than 0 and at most 3600.", valueName: "SECONDS"))
    var connectTimeout: Double = library.timeout.connect.seconds

    @Option(name: .customLong("stall-timeout"), help: ArgumentHelp("Seconds without any bytes before a request times out; more than 0 and at most 3600.", valueName: "SECONDS"))
    var stallTimeout: Double = library.timeout.stall.seconds

    @Option(name: .customLong("max-concurrency"), help: ArgumentHelp("Transfers at once, over every host: a fixed limit. Without it, 16 run whatever the pace and more start at twice the pace the decoders finish images, up to \(library.maxConcurrentTransfers) running.", valueName: "N"))
    var maxConcurrency: Int?

    @Option(name: .customLong("max-host-connections"), help: ArgumentHelp("Transfers (connections) to one host at once.", valueName: "N"))
    var maxHostConnections: Int = library.maxHostConnections

    @Option(name: .customLong("max-inflight-bytes"), help: ArgumentHelp("Bytes running transfers may hold in temporary files at once; a number with an optional K, M, G or T (binary) suffix, from the largest size limit to 1T.", valueName: "BYTES"))
    var maxInflightBytes: String = String(library.maxInflightBytes)

    @Option(name: .customLong("breaker-failures"), help: ArgumentHelp("Failures in a row (connect, timeout, TLS, 5xx) after which a host is left alone for the cool-down (originUnavailable); 1 to 1000.", valueName: "N"))
    var breakerFailures: Int = library.breaker.failures

    @Option(name: .customLong("breaker-cooldown"), help: ArgumentHelp("Seconds a failing host is left alone before one request probes it; more than 0 and at most 3600.", valueName: "SECONDS"))
    var breakerCooldown: Double = library.breaker.cooldown.seconds

    @Option(name: .customLong("thumbnail-size"), help: ArgumentHelp("Longest edge of thumbnails, in pixels; 1 to 4096.", valueName: "PX"))
    var thumbnailSize: Int = library.thumbnailMaxEdge

    @Option(help: ArgumentHelp("Clipping rectangle of the thumbnails, an image's and a video's poster, in the unit square with the origin top-left, e.g. 0.25,0.25,0.5,0.5.", valueName: "X,Y,W,H"))
    var clip: String?

    @Option(name: .customLong("secret-param"), help: ArgumentHelp("A query parameter whose value is a secret, redacted from logs, spans and errors beside the built-in ones (signature, token, api_key, X-Amz-*, ...); repeatable.", valueName: "NAME"))
    var secretParameters: [String] = []

    @Option(help: ArgumentHelp("How the Android variant is cut to 2:1 and the square of the iOS thumbnail chosen (default: attention).", valueName: "MODE"))
    var crop: CropMode?

    @Option(help: ArgumentHelp("Where the crops centre (the subject), in the unit square, e.g. 0.3,0.6; wins over --crop's choice.", valueName: "X,Y"))
    var focus: String?

    @Option(name: .customLong("thumbnail-time"), help: ArgumentHelp("Seconds into a video for its poster-frame thumbnail (clamped to the duration; 0 is the first frame). Default: auto: the first frame when it is telling, otherwise the most detailed of the first 2 seconds.", valueName: "SECONDS"))
    var thumbnailTime: Double?

    @Flag(inversion: .prefixedNo, help: "Convert, fit, remux and transcode what iOS would not show (the default); --no-normalize delivers media only as downloaded and refuses WebP/HEIC/AVIF, images over the limit, QuickTime/3GPP/transport streams/Matroska/ADTS and every transcoded format.")
    var normalize = library.normalize

    @Flag(inversion: .prefixedNo, help: "Re-encode sound and video iOS cannot play (Ogg, FLAC, AC-3, WMA, WebM, Matroska with VP9 or AV1, Theora, WMV, Flash Video; H.264 above High or not 8-bit 4:2:0, AV1 or VP9 in MPEG-4) into AAC and H.264; --no-transcode refuses them.")
    var transcode = library.transcode

    @Option(name: .customLong("transcode-max-edge"), help: ArgumentHelp("Longest edge of re-encoded video, in pixels; \(TranscodeSettings.longEdgesText).", valueName: "PX"))
    var transcodeMaxEdge: Int = library.transcodeMaxLongEdge

    @Option(name: .customLong("decoder-isolation"), help: "Where decoders run: 'processes' (confined worker processes; a crash costs one attachment) or 'none' (in this process; unsafe for untrusted input).")
    var decoderIsolation: IsolationChoice = .processes

    @Flag(name: .customLong("decoders-without-landlock"), help: "Run decoder workers where the kernel has no Landlock (before Linux 5.13, many containers): they then keep to no directory. Refused by default.")
    var decodersWithoutLandlock = false

    @Flag(name: .customLong("allow-private-network"), help: "Allow loopback, private and link-local destinations (refused by default).")
    var allowPrivateNetwork = false

    @Option(name: .customLong("allow-cidr"), help: ArgumentHelp("Always allow this address range (repeatable), e.g. 10.1.2.0/24.", valueName: "CIDR"))
    var allowCIDR: [String] = []

    @Option(name: .customLong("deny-cidr"), help: ArgumentHelp("Always refuse this address range (repeatable); wins over every allowance.", valueName: "CIDR"))
    var denyCIDR: [String] = []

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("Also trust the CA certificates in this PEM file (repeatable); the system store stays trusted.", valueName: "FILE"))
    var caFiles: [String] = []

    @Option(help: ArgumentHelp("Send every request through this egress proxy by HTTP CONNECT (its address must be allowed, e.g. with --allow-cidr); proxies from the environment are ignored.", valueName: "URL"))
    var proxy: String?

    func validate() throws {
        _ = try trustedCertificates()
        if let proxy {
            var check = AttachFetchConfiguration()
            check.proxy = proxy
            do { try check.validate() } catch { throw ValidationError("--proxy: \(error.message)") }
        }
        guard (1...1000).contains(breakerFailures) else {
            throw ValidationError("--breaker-failures must be between 1 and 1000, not \(breakerFailures)")
        }
        for (name, value) in [("--deadline", deadline), ("--timeout", timeout), ("--connect-timeout", connectTimeout),
                              ("--stall-timeout", stallTimeout), ("--breaker-cooldown", breakerCooldown)] {
            guard value.isFinite, value > 0, value <= 3600 else {
                throw ValidationError("\(name) must be a number of seconds greater than 0 and at most 3600, not \(value)")
            }
        }
        if let maxConcurrency, !(1...Self.mostTransfers).contains(maxConcurrency) {
            throw ValidationError("--max-concurrency must be between 1 and \(Self.mostTransfers), not \(maxConcurrency)")
        }
        guard (1...Self.mostTransfers).contains(maxHostConnections) else {
            throw ValidationError("--max-host-connections must be between 1 and \(Self.mostTransfers), not \(maxHostConnections)")
        }
        _ = try inflightBytes()
        guard (1...4096).contains(thumbnailSize) else { throw ValidationError("--thumbnail-size must be between 1 and 4096 pixels") }
        guard TranscodeSettings.longEdges.contains(transcodeMaxEdge) else {
            throw ValidationError("--transcode-max-edge must be from \(TranscodeSettings.longEdgesText) pixels, not \(transcodeMaxEdge)")
        }
        if clip != nil { _ = try parsedClip() }
        _ = try parsedCrop()
        if let thumbnailTime, !(thumbnailTime.isFinite && thumbnailTime >= 0) {
            throw ValidationError("--thumbnail-time must be a number of seconds, 0 or more")
        }
        _ = try ranges(allowCIDR, "--allow-cidr")
        _ = try ranges(denyCIDR, "--deny-cidr")
    }

    /// The most transfers any option allows: each holds a socket and a descriptor for its file.
    static let mostTransfers = 4096

    /// --max-inflight-bytes as a number: digits with an optional K, M, G or T (powers of 1024),
    /// from the largest size limit up to 1 TiB.
    func inflightBytes() throws -> Int64 {
        let text = maxInflightBytes.trimmingCharacters(in: .whitespaces)
        let multipliers: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        var digits = Substring(text)
        var multiplier: Int64 = 1
        if let last = text.last?.uppercased().first, let factor = multipliers[last] {
            multiplier = factor
            digits = digits.dropLast()
        }
        let smallest = Self.library.sizeLimits.largest, largest: Int64 = 1 << 40
        guard let number = Int64(digits), number > 0, number <= largest / multiplier,
              (smallest...largest).contains(number * multiplier) else {
            throw ValidationError("--max-inflight-bytes must be a number of bytes (K, M, G or T allowed) from \(smallest) (the largest size limit) to 1T, not '\(maxInflightBytes)'")
        }
        return number * multiplier
    }

    /// --crop and --focus: the mode (nil: the default, attention) and the focal point.
    func parsedCrop() throws -> (mode: CropMode?, focus: FocusPoint?) {
        let mode = crop
        guard let focus else { return (mode, nil) }
        let values = focus.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard values.count == 2, let x = values[0], let y = values[1] else {
            throw ValidationError("--focus takes two numbers X,Y, not '\(focus)'")
        }
        do {
            return (mode, try FocusPoint(x: x, y: y))
        } catch {
            throw ValidationError("--focus: \(error.message)")
        }
    }

    func parsedClip() throws -> ClippingRectangle? {
        guard let clip else { return nil }
        let values = clip.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard values.count == 4, let x = values[0], let y = values[1], let w = values[2], let h = values[3] else {
            throw ValidationError("--clip takes four numbers X,Y,W,H, not '\(clip)'")
        }
        do {
            return try ClippingRectangle(x: x, y: y, width: w, height: h)
        } catch {
            throw ValidationError("--clip: \(error.message)")
        }
    }

    private func ranges(_ texts: [String], _ option: String) throws -> [CIDRRange] {
        try texts.map { text throws -> CIDRRange in
            do throws(AttachFetchError) {
                return try CIDRRange(text)
            } catch {
                throw ValidationError("\(option): \(error.message)")
            }
        }
    }

    /// The contents of the --ca-file files, each checked to hold a certificate.
    private func trustedCertificates() throws -> [String] {
        try caFiles.map { path in
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("--ca-file \(path) cannot be read")
            }
            var check = AttachFetchConfiguration()
            check.trustedCertificates = [String(decoding: data, as: UTF8.self)]
            do { try check.validate() } catch {
                throw ValidationError("--ca-file \(path) holds no PEM certificate")
            }
            return check.trustedCertificates[0]
        }
    }

    /// Decoder workers the pipeline takes from the fork server as its threads start
    /// (`DecoderReserve`): its image workers and its probe worker; none, and no fork server,
    /// when decoding is in-process.
    var reservedDecoders: Int {
        guard decoderIsolation != .none else { return 0 }
        let defaults = AttachFetchConfiguration()
        return defaults.thumbnailThreads + defaults.probeThreads
    }

    /// The library's configuration with these options applied.
    func configuration() throws -> AttachFetchConfiguration {
        AttachFetchConfiguration.addSecretQueryParameters(secretParameters)
        var configuration = AttachFetchConfiguration()
        configuration.timeout = .init(connect: .seconds(connectTimeout), request: .seconds(timeout), stall: .seconds(stallTimeout))
        configuration.defaultDeadline = .seconds(deadline)
        if let maxConcurrency {
            configuration.maxConcurrentTransfers = maxConcurrency
            configuration.transferConcurrency = .fixed
        }
        configuration.maxHostConnections = maxHostConnections
        configuration.breaker = .init(failures: breakerFailures, cooldown: .seconds(breakerCooldown))
        configuration.maxInflightBytes = try inflightBytes()
        configuration.thumbnailMaxEdge = thumbnailSize
        configuration.allowPrivateNetwork = allowPrivateNetwork
        configuration.normalize = normalize
        configuration.transcode = transcode
        configuration.transcodeMaxLongEdge = transcodeMaxEdge
        configuration.isolation = decoderIsolation == .none ? .none : .processes
        configuration.decoderRunsWithoutLandlock = decodersWithoutLandlock
        configuration.allowedRanges = try ranges(allowCIDR, "--allow-cidr")
        configuration.deniedRanges = try ranges(denyCIDR, "--deny-cidr")
        configuration.trustedCertificates = try trustedCertificates()
        configuration.proxy = proxy
        return configuration
    }
}

extension Duration {
    /// The duration in seconds, for options given in seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// `--decoder-isolation`'s values, so that `--help` lists them and completion offers them.
enum IsolationChoice: String, CaseIterable, ExpressibleByArgument {
    case processes
    case none
}

/// `--crop`'s values are the library's crop modes.
extension CropMode: ExpressibleByArgument {}
