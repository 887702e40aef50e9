/// Whether a body is admitted, decided as its bytes arrive: the one place a downloaded body or
/// an inspected file is typed (libmagic on the sniff window) and judged (`MediaPolicy`: the
/// type table, the request, the kind's limit, first against the declared size, then against
/// the bytes as they come). Whoever reads the bytes only moves them: it writes what `take` lets
/// through into the body file and the hash, and stops when it refuses.
package struct BodyAdmission {
    /// What to do with the bytes just handed over.
    package enum Step {
        /// Nothing yet: the bytes are held until the sniff window is complete.
        case hold
        /// Write these bytes (the held prefix, the new bytes included).
        case writeHeld([UInt8])
        /// Write the new bytes as they are.
        case write
        /// Stop: the body is refused.
        case refuse(Reason)
    }

    private let limits: MediaSizeLimits
    private let imagesOnly: Bool
    private let normalize: Bool
    private let transcode: Bool
    private let sniffer: MagicSniffer
    private var held: [UInt8] = []
    private var passed: Int64 = 0
    private var limit: Int64 = 0
    /// The admitted type; also set for a body refused only for its size (the descriptor names
    /// the kind that was too large).
    package private(set) var type: MediaType?
    /// libmagic's type of the sniff window, once known.
    package private(set) var sniffedMIME: String?
    private var refused = false
    private var admitted = false

    package init(limits: MediaSizeLimits, imagesOnly: Bool, normalize: Bool, transcode: Bool = true, sniffer: MagicSniffer) {
        self.transcode = transcode
        self.limits = limits
        self.imagesOnly = imagesOnly
        self.normalize = normalize
        self.sniffer = sniffer
    }

    /// The most bytes the body may still grow to, once its kind is admitted.
    package var admittedLimit: Int64? { admitted ? limit : nil }

    /// The bytes held for sniffing and not yet let through.
    package var holdsBytes: Bool { !held.isEmpty }
    /// Those bytes (at the body's end: the whole body, which was shorter than the window).
    package var heldBytes: [UInt8] { held }

    /// Takes the next bytes of the body. `declared` is the size announced so far (a
    /// Content-Length, a file's size) and what it is, for the message; `complete` says that no
    /// more bytes follow (the sniff window is then whatever arrived).
    package mutating func take(_ bytes: UnsafeRawBufferPointer, declared: (value: Int64, source: String)?, complete: Bool) -> Step {
        guard !refused else { return .refuse(Reason(code: .ioError, message: "the body was already refused")) }
        let step: Step
        if !admitted {
            held.append(contentsOf: bytes)
            if let reason = decide(declared: declared, complete: complete) {
                step = .refuse(reason)
            } else if !admitted {
                step = .hold
            } else {
                let prefix = held
                held = []
                step = count(Int64(prefix.count)) ?? .writeHeld(prefix)
            }
        } else {
            step = count(Int64(bytes.count)) ?? .write
        }
        if case .refuse = step { refused = true }
        return step
    }

    /// Counts bytes against the kind's limit; a refusal when they would go past it.
    private mutating func count(_ bytes: Int64) -> Step? {
        guard passed + bytes > limit, let type else {
            passed += bytes
            return nil
        }
        return .refuse(Reason(code: .sizeLimitExceeded,
                              message: "the body grew past the \(MediaPolicy.limitName(type, normalize: normalize)) limit of \(limit) bytes"))
    }

    /// Sniffs the held prefix once its window is complete and applies the policy. A reason
    /// when the body is refused; `type` set when it is admitted.
    private mutating func decide(declared: (value: Int64, source: String)?, complete: Bool) -> Reason? {
        let sniffed: String
        switch held.withUnsafeBytes({
            SniffWindow.decide($0, complete: complete, maxLookahead: Int(limits.audio), sniffer: sniffer)
        }) {
        case .needMore:
            return nil
        case .sniffed(let mime, _):
            sniffed = mime
            sniffedMIME = mime
        case .refused(let code, let message):
            return Reason(code: code, message: message)
        }
        switch MediaPolicy.admit(sniffed: sniffed, size: declared, limits: limits, imagesOnly: imagesOnly, normalize: normalize,
                                 transcode: transcode) {
        case .success(let admitted):
            type = admitted
            self.admitted = true
            limit = MediaPolicy.streamingLimit(for: admitted, limits: limits, normalize: normalize)
            return nil
        case .failure(let reason):
            // The kind is known even when its size is refused: kept for the descriptor.
            if reason.code == .sizeLimitExceeded {
                type = MediaType.forSniffedMIME(sniffed) ?? MediaType.convertibleForSniffedMIME(sniffed)
            }
            return reason
        }
    }
}
