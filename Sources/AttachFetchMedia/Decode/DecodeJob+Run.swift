import AttachFetchCore
import AttachFetchDecoderProtocol

extension DecodeJob {
    /// Runs the job here, on the calling thread. `shouldStop` is checked between steps.
    package func run(shouldStop: () -> Bool = { false }) -> DecodeAnswer {
        // libvips' error buffer is per process: whatever an earlier job left in it (a fallback
        // that failed quietly, a message nobody took) must not become this job's reason.
        Vips.clearError()
        let answer: DecodeAnswer
        switch openingSource {
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
                                                         limits: limits.animationAsVideo ?? .init(maxBytes: limits.maxBytes, maxPixels: limits.decode.maxPixels),
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
}
