import Foundation

/// One piece of work that hands downloaded bytes to a C decoder (libvips, libheif,
/// libjpeg-turbo, FFmpeg, libswscale). The same description runs in-process or in a decoder
/// worker process, so both ways run exactly the same code.
package enum DecodeJob: Codable, Sendable {
    case thumbnail(source: String, destinationBase: String, shape: Thumbnailer.Shape, limits: Thumbnailer.Limits)
    case normalize(source: String, type: MediaType, destinationBase: String, limits: ImageNormalizer.Limits)
    case probe(source: String, type: MediaType, thumbnailTime: Double?, thumbnailBase: String?,
               shape: Thumbnailer.Shape, limits: MediaProber.Limits)
    /// `orTranscode`: when a stream cannot be carried in MPEG-4 as it is (H.263, MP2, PCM, ...),
    /// the file is transcoded instead (the answer is then `transcoded`).
    case remux(source: String, destinationBase: String, orTranscode: MediaTranscoder.Fallback? = nil)
    case transcode(source: String, type: MediaType, destinationBase: String, limits: MediaTranscoder.Limits)

    /// Runs the job here, on the calling thread. `shouldStop` is checked between steps.
    package func run(shouldStop: () -> Bool = { false }) -> DecodeAnswer {
        // libvips' error buffer is per process: whatever an earlier job left in it (a fallback
        // that failed quietly, a message nobody took) must not become this job's reason.
        Vips.clearError()
        let answer: DecodeAnswer
        switch self {
        case .thumbnail(let source, let destinationBase, let shape, let limits):
            answer = .init(Thumbnailer.make(source: source, destinationBase: destinationBase, shape: shape, limits: limits), \.thumbnail)
        case .normalize(let source, let type, let destinationBase, let limits):
            switch ImageNormalizer.normalize(source: source, type: type, destinationBase: destinationBase,
                                             limits: limits, shouldStop: shouldStop) {
            case .success(let image?): answer = .init(.success(image), \.normalized)
            case .failure(let reason): answer = .init(failure: reason)
            case .success(nil):
                // An animation too large as a GIF, moving as a video (`animationAsVideo`).
                answer = .init(MediaTranscoder.transcode(source: source, type: type, destinationBase: destinationBase,
                                                         limits: limits.animationAsVideo ?? .init(maxBytes: limits.maxBytes),
                                                         shouldStop: shouldStop), \.transcoded)
            }
        case .probe(let source, let type, let thumbnailTime, let thumbnailBase, let shape, let limits):
            answer = .init(MediaProber.probe(source: source, type: type, thumbnailTime: thumbnailTime,
                                             thumbnailBase: thumbnailBase, shape: shape, limits: limits,
                                             shouldStop: shouldStop), \.probed)
        case .remux(let source, let destinationBase, let fallback):
            let remuxed = VideoRemuxer.remux(source: source, destinationBase: destinationBase, shouldStop: shouldStop)
            if case .failure(let reason) = remuxed, reason.code == .unsupportedType, let fallback {
                answer = .init(MediaTranscoder.transcode(source: source, type: fallback.type, destinationBase: destinationBase,
                                                         limits: fallback.limits, shouldStop: shouldStop), \.transcoded)
            } else {
                answer = .init(remuxed, \.remuxed)
            }
        case .transcode(let source, let type, let destinationBase, let limits):
            answer = .init(MediaTranscoder.transcode(source: source, type: type, destinationBase: destinationBase, limits: limits,
                                                     shouldStop: shouldStop), \.transcoded)
        }
        return answer.withoutWorkingPaths(source: source, outputBase: outputBase)
    }

    package var source: String {
        switch self {
        case .thumbnail(let source, _, _, _), .normalize(let source, _, _, _), .probe(let source, _, _, _, _, _),
             .remux(let source, _, _), .transcode(let source, _, _, _): return source
        }
    }

    /// Where the job writes: this base plus an image extension.
    var outputBase: String? {
        switch self {
        case .thumbnail(_, let base, _, _), .normalize(_, _, let base, _): return base
        case .probe(_, _, _, let base, _, _): return base
        case .remux(_, let base, _), .transcode(_, _, let base, _): return base
        }
    }

    /// Every file the job may have made, for removal when it was killed or abandoned (an
    /// unnamed output is its ledger's to free).
    var possibleOutputs: [String] {
        guard let base = outputBase, UnnamedFile.descriptor(in: base) == nil else { return [] }
        return ["jpg", "png", "gif", "mp4", "m4a"].map { "\(base).\($0)" }
    }

    /// The descriptors of the unnamed files the job reads or writes (`UnnamedFile` working
    /// paths), source first: what a decoder worker is sent along with the job.
    var unnamedDescriptors: [Int32] {
        var found: [Int32] = []
        for path in [source, outputBase].compactMap({ $0 }) {
            if let descriptor = UnnamedFile.descriptor(in: path), !found.contains(descriptor) { found.append(descriptor) }
        }
        return found
    }

    /// The same job with each working path's descriptor replaced by `replacement` (the worker's
    /// copies of the pipeline's descriptors).
    func replacingDescriptors(_ replacement: [Int32: Int32]) -> DecodeJob {
        func map(_ path: String) -> String { UnnamedFile.replacingDescriptor(in: path, replacement) }
        switch self {
        case .thumbnail(let source, let base, let shape, let limits):
            return .thumbnail(source: map(source), destinationBase: map(base), shape: shape, limits: limits)
        case .normalize(let source, let type, let base, let limits):
            return .normalize(source: map(source), type: type, destinationBase: map(base), limits: limits)
        case .probe(let source, let type, let time, let base, let shape, let limits):
            return .probe(source: map(source), type: type, thumbnailTime: time, thumbnailBase: base.map(map), shape: shape, limits: limits)
        case .remux(let source, let base, let fallback):
            return .remux(source: map(source), destinationBase: map(base), orTranscode: fallback)
        case .transcode(let source, let type, let base, let limits):
            return .transcode(source: map(source), type: type, destinationBase: map(base), limits: limits)
        }
    }
}

// MARK: - Codable, for the pipe to a decoder worker

extension Thumbnailer.Shape: Codable {
    private enum CodingKeys: String, CodingKey { case clip }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self = try container.decodeIfPresent(ClippingRectangle.self, forKey: .clip).map { .clip($0) } ?? .squareCenter
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if case .clip(let rectangle) = self { try container.encode(rectangle, forKey: .clip) }
    }
}
