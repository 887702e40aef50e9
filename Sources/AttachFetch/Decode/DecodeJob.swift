import Foundation

/// One piece of work that hands downloaded bytes to a C decoder (libvips, libheif,
/// libjpeg-turbo, FFmpeg, libswscale). The same description runs in-process or in a decoder
/// worker process, so both ways run exactly the same code.
enum DecodeJob: Codable, Sendable {
    case thumbnail(source: String, destinationBase: String, shape: Thumbnailer.Shape, limits: Thumbnailer.Limits)
    case normalize(source: String, type: MediaType, destinationBase: String, limits: ImageNormalizer.Limits)
    case probe(source: String, type: MediaType, thumbnailTime: Double?, thumbnailBase: String?,
               shape: Thumbnailer.Shape, limits: MediaProber.Limits)
    case remux(source: String, destinationBase: String)

    /// Runs the job here, on the calling thread. `shouldStop` is checked between steps.
    func run(shouldStop: () -> Bool = { false }) -> DecodeAnswer {
        // libvips' error buffer is per process: whatever an earlier job left in it (a fallback
        // that failed quietly, a message nobody took) must not become this job's reason.
        Vips.clearError()
        let answer: DecodeAnswer
        switch self {
        case .thumbnail(let source, let destinationBase, let shape, let limits):
            answer = .init(Thumbnailer.make(source: source, destinationBase: destinationBase, shape: shape, limits: limits), \.thumbnail)
        case .normalize(let source, let type, let destinationBase, let limits):
            answer = .init(ImageNormalizer.normalize(source: source, type: type, destinationBase: destinationBase,
                                                     limits: limits, shouldStop: shouldStop), \.normalized)
        case .probe(let source, let type, let thumbnailTime, let thumbnailBase, let shape, let limits):
            answer = .init(MediaProber.probe(source: source, type: type, thumbnailTime: thumbnailTime,
                                             thumbnailBase: thumbnailBase, shape: shape, limits: limits,
                                             shouldStop: shouldStop), \.probed)
        case .remux(let source, let destinationBase):
            answer = .init(VideoRemuxer.remux(source: source, destinationBase: destinationBase, shouldStop: shouldStop), \.remuxed)
        }
        return answer.withoutWorkingPaths(source: source, outputBase: outputBase)
    }

    var source: String {
        switch self {
        case .thumbnail(let source, _, _, _), .normalize(let source, _, _, _), .probe(let source, _, _, _, _, _),
             .remux(let source, _): return source
        }
    }

    /// Where the job writes: this base plus an image extension.
    var outputBase: String? {
        switch self {
        case .thumbnail(_, let base, _, _), .normalize(_, _, let base, _): return base
        case .probe(_, _, _, let base, _, _): return base
        case .remux(_, let base): return base
        }
    }

    /// Every file the job may have made, for removal when it was killed or abandoned.
    var possibleOutputs: [String] {
        guard let base = outputBase else { return [] }
        return ["jpg", "png", "gif", "mp4"].map { "\(base).\($0)" }
    }
}

/// What a decode job made, or why it failed: exactly one of the fields is set.
struct DecodeAnswer: Codable, Sendable {
    var failure: Reason?
    var thumbnail: ThumbnailOutcome?
    var normalized: NormalizedImage?
    var probed: ProbeOutcome?
    var remuxed: RemuxedVideo?

    init(failure: Reason) { self.failure = failure }

    init<Value>(_ result: Result<Value, Reason>, _ field: WritableKeyPath<DecodeAnswer, Value?>) {
        switch result {
        case .success(let value): self[keyPath: field] = value
        case .failure(let problem): failure = problem
        }
    }

    /// The outcome at `field`, or the failure.
    func result<Value>(_ field: KeyPath<DecodeAnswer, Value?>) -> Result<Value, Reason> {
        if let value = self[keyPath: field] { return .success(value) }
        return .failure(failure ?? Reason(code: .ioError, message: "the decoder gave no answer"))
    }

    /// Files the answer hands over (removed when nobody takes them).
    var files: [String] {
        [thumbnail?.file, normalized?.file, probed?.poster?.file, remuxed?.file].compactMap { $0 }
    }

    /// A reason message never shows working paths: the decoders' messages may name the
    /// downloaded file or an output file, which mean nothing to the caller.
    func withoutWorkingPaths(source: String, outputBase: String?) -> DecodeAnswer {
        guard let failure else { return self }
        var message = failure.message.replacingOccurrences(of: source, with: "the downloaded file")
        if let outputBase { message = message.replacingOccurrences(of: outputBase, with: "the output file") }
        let directory = (source as NSString).deletingLastPathComponent
        if !directory.isEmpty { message = message.replacingOccurrences(of: directory + "/", with: "") }
        var answer = self
        answer.failure = Reason(code: failure.code, message: message)
        return answer
    }
}

// MARK: - Codable, for the pipe to a decoder worker

extension Thumbnailer.Shape: Codable {
    private enum CodingKeys: String, CodingKey { case clip }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self = try container.decodeIfPresent(ClippingRectangle.self, forKey: .clip).map { .clip($0) } ?? .squareCenter
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if case .clip(let rectangle) = self { try container.encode(rectangle, forKey: .clip) }
    }
}

/// A table row travels as its MIME type.
extension MediaType: Codable {
    public init(from decoder: any Decoder) throws {
        let mime = try decoder.singleValueContainer().decode(String.self)
        guard let type = (MediaType.all + MediaType.convertible).first(where: { $0.mimeType == mime }) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "no table row for \(mime)"))
        }
        self = type
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(mimeType)
    }
}
