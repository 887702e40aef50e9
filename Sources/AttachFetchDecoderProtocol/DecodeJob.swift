import AttachFetchCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One piece of work that hands downloaded bytes to a C decoder (libvips, libheif,
/// libjpeg-turbo, FFmpeg, libswscale). The same description runs in-process or in a decoder
/// worker process, so both ways run exactly the same code (`run`, in AttachFetchMedia).
package enum DecodeJob: Codable, Sendable {
    case thumbnail(source: String, destinationBase: String, shape: ThumbnailShape, limits: ThumbnailLimits)
    case normalize(source: String, type: MediaType, destinationBase: String, limits: NormalizeLimits)
    case probe(source: String, type: MediaType, thumbnailTime: Double?, thumbnailBase: String?,
               shape: ThumbnailShape, limits: ProbeLimits)
    /// `orTranscode`: when a stream cannot be carried in MPEG-4 as it is (H.263, MP2, PCM, ...),
    /// the file is transcoded instead (the answer is then `transcoded`).
    case remux(source: String, destinationBase: String, orTranscode: TranscodeFallback? = nil)
    case transcode(source: String, type: MediaType, destinationBase: String, limits: TranscodeLimits)

    package var source: String {
        switch self {
        case .thumbnail(let source, _, _, _), .normalize(let source, _, _, _), .probe(let source, _, _, _, _, _),
             .remux(let source, _, _), .transcode(let source, _, _, _): return source
        }
    }

    /// Where the job writes: this base plus an image extension.
    package var outputBase: String? {
        switch self {
        case .thumbnail(_, let base, _, _), .normalize(_, _, let base, _): return base
        case .probe(_, _, _, let base, _, _): return base
        case .remux(_, let base, _), .transcode(_, _, let base, _): return base
        }
    }

    /// The extensions a job of this kind may write after `outputBase`: what the keeper accepts
    /// in an answer (`AnswerCheck`). The one list of them.
    package var outputExtensions: [String] {
        switch self {
        case .thumbnail, .probe: return Self.imageExtensions
        case .normalize: return Self.normalizedExtensions
        case .remux, .transcode: return Self.mediaExtensions
        }
    }

    private static let imageExtensions = ["jpg", "png"]
    /// An animation too large as a GIF may come back as a video.
    private static let normalizedExtensions = imageExtensions + ["gif", "mp4"]
    /// A remux that falls back to a transcode may find sound alone; an MP3 is cut as MP3.
    private static let mediaExtensions = ["mp4", "m4a", "mp3"]
    /// Every extension any job may write: a worker taken over may write any of them, whatever
    /// its job.
    private static let anyOutputExtension = Array(Set(normalizedExtensions + mediaExtensions)).sorted()

    /// Every file the job may have made, for removal when it was killed or abandoned (an
    /// unnamed output is its ledger's to free).
    package var possibleOutputs: [String] {
        guard let base = outputBase, UnnamedFile.descriptor(in: base) == nil else { return [] }
        return Self.anyOutputExtension.map { "\(base).\($0)" }
    }

    /// The descriptors of the unnamed files the job reads or writes (`UnnamedFile` working
    /// paths), source first: what a decoder worker is sent along with the job.
    package var unnamedDescriptors: [Int32] {
        var found: [Int32] = []
        for path in [source, outputBase].compactMap({ $0 }) {
            if let descriptor = UnnamedFile.descriptor(in: path), !found.contains(descriptor) { found.append(descriptor) }
        }
        return found
    }

    /// The same job with each working path's descriptor replaced by `replacement` (the worker's
    /// copies of the pipeline's descriptors).
    package func replacingDescriptors(_ replacement: [Int32: Int32]) -> DecodeJob {
        func map(_ path: String) -> String { UnnamedFile.replacingDescriptor(in: path, replacement) }
        return mapping(source: map, base: map)
    }

    /// The same job reading its source by a path `open(2)` takes: a working path without the
    /// extension it carries for its format (a sealed output, read by the next job).
    package var openingSource: DecodeJob { mapping(source: UnnamedFile.openable, base: { $0 }) }

    private func mapping(source mapSource: (String) -> String, base map: (String) -> String) -> DecodeJob {
        switch self {
        case .thumbnail(let source, let base, let shape, let limits):
            return .thumbnail(source: mapSource(source), destinationBase: map(base), shape: shape, limits: limits)
        case .normalize(let source, let type, let base, let limits):
            return .normalize(source: mapSource(source), type: type, destinationBase: map(base), limits: limits)
        case .probe(let source, let type, let time, let base, let shape, let limits):
            return .probe(source: mapSource(source), type: type, thumbnailTime: time, thumbnailBase: base.map(map), shape: shape, limits: limits)
        case .remux(let source, let base, let fallback):
            return .remux(source: mapSource(source), destinationBase: map(base), orTranscode: fallback)
        case .transcode(let source, let type, let base, let limits):
            return .transcode(source: mapSource(source), type: type, destinationBase: map(base), limits: limits)
        }
    }
}

// MARK: - Codable, for the pipe to a decoder worker

extension ThumbnailShape: Codable {
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
