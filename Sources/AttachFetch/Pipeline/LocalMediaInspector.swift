import Foundation
import Glibc

/// Runs the pipeline's checks after the download — sniff, table, size limit, pixel budgets,
/// conversion to fit, full decode and thumbnail, FFmpeg's probe and poster frame — on a file
/// already on disk. For media that arrived some other
/// way, and for the fuzz target, which feeds it arbitrary bytes.
///
/// Holds a libmagic handle, which is not thread-safe: use one inspector per thread.
public final class LocalMediaInspector {
    private let sniffer: MagicSniffer
    private let configuration: AttachFetchConfiguration

    public init(configuration: AttachFetchConfiguration = .init()) throws(AttachFetchError) {
        try configuration.validate()
        try Vips.ensureStarted()
        self.sniffer = try MagicSniffer()
        self.configuration = configuration
    }

    /// Inspects `path`. A thumbnail is written to `thumbnailBase` + ".jpg" or ".png" (never over
    /// an existing file). The descriptor's `file` is `path` when it passes as it is, or
    /// `thumbnailBase` + ".delivered." + extension when it had to be converted to fit.
    public func inspect(file path: String, thumbnailBase: String, clip: ClippingRectangle = .whole,
                        thumbnailTime: Double? = nil) -> AttachmentDescriptor {
        let started = ContinuousClock.now
        var descriptor = AttachmentDescriptor(identifier: (path as NSString).lastPathComponent, url: "file://" + path,
                                              status: .ready, timings: .init(total: 0))
        func fail(_ code: ReasonCode, _ message: String) -> AttachmentDescriptor {
            descriptor.status = code.status
            descriptor.reason = .init(code: code, message: message)
            descriptor.timings.total = started.millisecondsElapsed
            return descriptor
        }
        guard let handle = FileHandle(forReadingAtPath: path) else { return fail(.ioError, "cannot read \(path)") }
        let lookahead = Int(configuration.sizeLimits.audio)
        let prefix = (try? handle.read(upToCount: lookahead + SniffWindow.size)) ?? Data()
        try? handle.close()
        let size = Int64(fileSize(path))
        guard size > 0 else { return fail(.emptyBody, "the file is empty") }
        let sniffed: String
        switch prefix.withUnsafeBytes({ SniffWindow.decide($0, complete: true, maxLookahead: lookahead, sniffer: sniffer) }) {
        case .sniffed(let mime, _): sniffed = mime
        case .refused(let code, let message): return fail(code, message)
        case .needMore: return fail(.ioError, "the file could not be read")
        }
        descriptor.mimeType = sniffed
        let type: MediaType
        switch MediaPolicy.admit(sniffed: sniffed, size: (size, "the file's size"), limits: configuration.sizeLimits,
                                 imagesOnly: false, normalize: configuration.normalize) {
        case .success(let admitted): type = admitted
        case .failure(let reason): return fail(reason.code, reason.message)
        }
        descriptor.recordSource(type, bytes: size)
        var delivered = (path: path, type: type)
        switch type.kind {
        case .image:
            if MediaPolicy.needsConversion(type, bytes: size, limits: configuration.sizeLimits) {
                switch ImageNormalizer.normalize(source: path, type: type, destinationBase: thumbnailBase + ".delivered",
                                                 limits: ImageNormalizer.Limits(configuration)) {
                case .success(let image):
                    delivered = (image.file, image.type)
                    descriptor.record(image)
                case .failure(let problem):
                    return fail(problem.code, problem.message)
                }
            }
            switch Thumbnailer.make(source: delivered.path, destinationBase: thumbnailBase, shape: .clip(clip),
                                    limits: Thumbnailer.Limits(configuration)) {
            case .success(let made):
                descriptor.record(thumbnailOf: made)
                descriptor.thumbnail = .init(file: made.file, width: made.width, height: made.height)
            case .failure(let problem):
                if delivered.path != path { unlink(delivered.path) }
                return fail(problem.code, problem.message)
            }
        case .audio, .video:
            if MediaPolicy.needsRemux(type) {
                switch VideoRemuxer.remux(source: path, destinationBase: thumbnailBase + ".delivered") {
                case .success(let video):
                    delivered = (video.file, .mp4)
                    descriptor.record(video)
                case .failure(let problem):
                    return fail(problem.code, problem.message)
                }
            }
            switch MediaProber.probe(source: delivered.path, type: delivered.type, thumbnailTime: thumbnailTime,
                                     thumbnailBase: thumbnailBase,
                                     shape: .clip(clip), limits: MediaProber.Limits(configuration)) {
            case .success(let probed):
                if let refusal = MediaPolicy.checkDelivered(probed.resolvedType, bytes: descriptor.bytes ?? size, limits: configuration.sizeLimits) {
                    if let poster = probed.poster { unlink(poster.file) }
                    if delivered.path != path { unlink(delivered.path) }
                    return fail(refusal.code, refusal.message)
                }
                delivered.type = probed.resolvedType
                descriptor.record(probed.probe)
                descriptor.thumbnail = probed.poster.map { .init(file: $0.file, width: $0.width, height: $0.height, time: $0.time) }
            case .failure(let problem):
                if delivered.path != path { unlink(delivered.path) }
                return fail(problem.code, problem.message)
            }
        }
        descriptor.record(delivered: delivered.type)
        descriptor.file = delivered.path
        descriptor.timings.total = started.millisecondsElapsed
        return descriptor
    }

    private func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }
}
