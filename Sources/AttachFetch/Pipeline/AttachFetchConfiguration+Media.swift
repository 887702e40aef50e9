import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The media layer's settings, as the pipeline fills them from its configuration.

extension ThumbnailLimits {
    /// The decode budgets, from the configuration.
    init(_ configuration: AttachFetchConfiguration) {
        self.init(maxEdge: configuration.thumbnailMaxEdge, maxPixels: configuration.maxImagePixels,
                  maxProgressivePixels: configuration.maxProgressivePixels,
                  maxAnimationFrames: configuration.maxAnimationFrames, maxAnimationPixels: configuration.maxAnimationPixels)
    }
}

extension NormalizeLimits {
    init(_ configuration: AttachFetchConfiguration) {
        self.init(maxBytes: configuration.sizeLimits.image, maxAttempts: configuration.maxNormalizeAttempts,
                  decode: ThumbnailLimits(configuration))
    }

    /// Android's: a still image (JPEG, or PNG with transparency) within 1 MB.
    init(android configuration: AttachFetchConfiguration) {
        self.init(configuration)
        maxBytes = Platform.androidImageLimit
        keepsAnimation = false
        // Android's notification shows a file's numbers as sRGB, and ignores the EXIF orientation.
        convertsToSRGB = true
        turnsLosslessly = true
    }
}

extension ProbeLimits {
    init(_ configuration: AttachFetchConfiguration) {
        self.init(maxDecodedFrames: configuration.maxVideoDecodeFrames, maxPackets: configuration.maxVideoDecodeFrames * 4,
                  thumbnail: ThumbnailLimits(configuration), convertsUnplayable: configuration.normalize,
                  transcodesUnplayable: configuration.normalize && configuration.transcode)
    }
}

extension DecoderProcess {
    /// How a pipeline with this configuration starts its workers; nil for isolation `.none`.
    /// The executable must exist and be executable: a configuration error otherwise.
    /// `workDirectory`: the one directory the workers may write (Landlock), the pipeline's own,
    /// where its work store is; what they make is sealed before it is used. Nil for the local
    /// inspector, whose files are wherever its caller says and are not published.
    static func launch(for configuration: AttachFetchConfiguration, workDirectory: String?) throws(AttachFetchError) -> Launch? {
        guard configuration.isolation == .processes else { return nil }
        let executable: String
        if let configured = configuration.decoderExecutable {
            executable = configured
        } else {
            executable = WorkerExecution.executablePathBesideProgram
        }
        guard access(executable, X_OK) == 0 else {
            throw .invalidConfiguration("the decoder worker \(executable) is not there or not executable: build it (swift build --product attach-fetch-decoder) and keep it beside the program, set decoderExecutable, or set isolation to .none (unsafe for untrusted input)")
        }
        var launch = Launch(executable: executable, memoryBytes: configuration.decoderMemoryLimit,
                            cpuSecondsPerJob: configuration.decoderCPUSecondsPerJob, fileSizeBytes: configuration.workerFileSizeLimit,
                            takesReserved: configuration.decoderExecutable == nil,
                            exitGraceMilliseconds: configuration.decoderExitGraceMilliseconds)
        launch.workDirectory = workDirectory.map { ($0 as NSString).standardizingPath }
        launch.jobsPerWorker = max(1, configuration.decoderJobsPerWorker)
        launch.runsWithoutLandlock = configuration.decoderRunsWithoutLandlock
        if let assumed = configuration.assumedKernelLandlockABI { launch.kernelLandlockABI = assumed }
        // Said at the start rather than by every attachment's refused worker.
        if workDirectory != nil && launch.kernelLandlockABI < 1 && !launch.runsWithoutLandlock && !ConfinementCheck.programIsEmulated {
            throw .invalidConfiguration("this kernel has no Landlock, so decoder workers would keep to no directory: run on Linux 5.13 or later with Landlock on (lsm=...,landlock), or allow it with decoderRunsWithoutLandlock (--decoders-without-landlock), docs/security.md")
        }
        return launch
    }
}

extension WorkerThread {
    /// Isolation `.none`: a job runs on the pool's own thread, in this process.
    static let inThisProcess: RunHere = { job, isAbandoned in job.run(shouldStop: isAbandoned) }
}

extension AttachFetchConfiguration {
    /// The file-size limit a worker gets: `decoderFileSizeLimit`, or while the pipeline converts
    /// video, what a remuxed or transcoded video may reach (the video limit and 1 MiB of index)
    /// when that is more.
    var workerFileSizeLimit: Int {
        guard normalize else { return decoderFileSizeLimit }
        let video = Int(clamping: sizeLimits.video) + (1 << 20)
        return max(decoderFileSizeLimit, video)
    }
}

extension AttachFetchConfiguration {
    /// Adds query parameters whose values are secrets to the one redaction every log line,
    /// span and error message of this process uses (beside `signature`, `sig`, `token`,
    /// `access_token`, `api_key`, `key`, `auth`, `password`, `secret` and `X-Amz-*`), compared
    /// without regard to case. Process-wide, from the call on: call it before the first pipeline.
    public static func addSecretQueryParameters(_ names: [String]) {
        URLRedaction.addSecretParameters(names)
    }
}
