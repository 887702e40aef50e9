import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The media layer's settings, as the pipeline fills them from its configuration.

extension Thumbnailer.Limits {
    /// The decode budgets, from the configuration.
    init(_ configuration: AttachFetchConfiguration) {
        self.init(maxEdge: configuration.thumbnailMaxEdge, maxPixels: configuration.maxImagePixels,
                  maxProgressivePixels: configuration.maxProgressivePixels,
                  maxAnimationFrames: configuration.maxAnimationFrames, maxAnimationPixels: configuration.maxAnimationPixels)
    }
}

extension ImageNormalizer.Limits {
    init(_ configuration: AttachFetchConfiguration) {
        self.init(maxBytes: configuration.sizeLimits.image, maxAttempts: configuration.maxNormalizeAttempts,
                  decode: Thumbnailer.Limits(configuration))
    }

    /// Android's: a still image (JPEG, or PNG with transparency) within 1 MB.
    init(android configuration: AttachFetchConfiguration) {
        self.init(configuration)
        maxBytes = Platform.androidImageLimit
        keepsAnimation = false
    }
}

extension MediaProber.Limits {
    init(_ configuration: AttachFetchConfiguration) {
        self.init(maxDecodedFrames: configuration.maxVideoDecodeFrames, maxPackets: configuration.maxVideoDecodeFrames * 4,
                  thumbnail: Thumbnailer.Limits(configuration), convertsUnplayable: configuration.normalize,
                  transcodesUnplayable: configuration.normalize && configuration.transcode)
    }
}

extension DecoderProcess {
    /// How a pipeline with this configuration starts its workers; nil for isolation `.none`.
    /// The executable must exist and be executable: a configuration error otherwise.
    static func launch(for configuration: AttachFetchConfiguration) throws(AttachFetchError) -> Launch? {
        guard configuration.isolation == .processes else { return nil }
        let executable: String
        if let configured = configuration.decoderExecutable {
            executable = configured
        } else {
            let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
            executable = ((own as NSString).deletingLastPathComponent as NSString).appendingPathComponent("attach-fetch-decoder")
        }
        guard access(executable, X_OK) == 0 else {
            throw .invalidConfiguration("the decoder worker \(executable) is not there or not executable: build it (swift build --product attach-fetch-decoder) and keep it beside the program, set decoderExecutable, or set isolation to .none (unsafe for untrusted input)")
        }
        return Launch(executable: executable, memoryBytes: configuration.decoderMemoryLimit,
                      cpuSecondsPerJob: configuration.decoderCPUSecondsPerJob, fileSizeBytes: configuration.decoderFileSizeLimit,
                      takesReserved: configuration.decoderExecutable == nil,
                      exitGraceMilliseconds: configuration.decoderExitGraceMilliseconds)
    }
}
