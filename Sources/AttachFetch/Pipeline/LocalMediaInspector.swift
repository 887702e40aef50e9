import Foundation

/// Runs the pipeline's work after the download — sniff, table, size limit, conversion to fit,
/// full decode and thumbnail, FFmpeg's probe and poster frame: `Stage.afterDownload`, the same
/// stages — on a file already on disk, one stage after another. For media that arrived some
/// other way, and for the fuzz target, which feeds it arbitrary bytes. Decoding happens in a
/// decoder worker process of its own unless the configuration says `isolation = .none` (the
/// fuzzer's choice, for speed and coverage: unsafe for untrusted input).
///
/// Holds a libmagic handle and its worker, neither thread-safe: use one inspector per thread.
public final class LocalMediaInspector {
    private let sniffer: MagicSniffer
    private let stages: InlineRunner

    /// Makes an inspector: validates `configuration` and opens libmagic; the decoder worker starts
    /// at the first decode.
    public init(configuration: AttachFetchConfiguration = .init()) throws(AttachFetchError) {
        try configuration.validate()
        try Vips.ensureStarted()
        self.sniffer = try MagicSniffer()
        self.stages = try InlineRunner(configuration: configuration)
    }

    /// Inspects `path`. A thumbnail is written to `thumbnailBase` + ".jpg" or ".png" (never over
    /// an existing file). The descriptor's `file` is `path` when it passes as it is, or
    /// `thumbnailBase` + ".delivered." + extension when it had to be converted to fit; a platform
    /// variant (`configuration.platforms`) is `thumbnailBase` + ".variant." + extension. Nothing
    /// else is left behind, and `path` itself is never changed.
    public func inspect(file path: String, thumbnailBase: String, clip: ClippingRectangle = .whole,
                        thumbnailTime: Double? = nil) -> AttachmentDescriptor {
        var descriptor = DescriptorBuilder(identifier: (path as NSString).lastPathComponent, url: "file://" + path,
                                           start: .now)
        let source: AttachmentWork.Source
        switch read(path) {
        case .success(let read): source = read
        case .failure(let reason): return descriptor.failed(reason)
        }
        descriptor.record(sniffed: source.sniffedMIME, kind: nil)
        let ledger = FileLedger()
        defer { ledger.close() }
        var work = AttachmentWork(
            descriptor: descriptor, source: source,
            plan: .init(shape: .clip(clip), thumbnailTime: thumbnailTime,
                        convertedBase: thumbnailBase + ".delivered", thumbnailBase: thumbnailBase,
                        variantBase: thumbnailBase + ".variant", platforms: stages.configuration.platforms),
            ledger: ledger)
        if let reason = stages.run(Stage.afterDownload, on: &work) { return work.descriptor.failed(reason) }
        let file = work.admitted
        ledger.deliver(file.path)
        if let thumbnail = work.thumbnail { ledger.deliver(thumbnail.file) }
        for path in work.variantFiles.values { ledger.deliver(path) }
        return work.ready(file: file.path, thumbnailFile: work.thumbnail?.file, variantFiles: work.variantFiles)
    }

    /// Reads the file as the download reads a body: the sniff window's type, the size and the
    /// SHA-256, in one pass, holding only the sniff window in memory.
    private func read(_ path: String) -> Result<AttachmentWork.Source, Reason> {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            return .failure(Reason(code: .ioError, message: "cannot read \(path)"))
        }
        defer { try? handle.close() }
        let digest = SHA256Digest()
        let lookahead = Int(stages.configuration.sizeLimits.audio)
        var window = Data()
        var sniffed: String?
        var bytes: Int64 = 0
        while true {
            let chunk: Data
            do { chunk = try handle.read(upToCount: 64 * 1024) ?? Data() } catch {
                return .failure(Reason(code: .ioError, message: "cannot read \(path): \(error.localizedDescription)"))
            }
            chunk.withUnsafeBytes { digest.update($0) }
            bytes += Int64(chunk.count)
            if sniffed == nil {
                window.append(chunk)
                switch window.withUnsafeBytes({ SniffWindow.decide($0, complete: chunk.isEmpty, maxLookahead: lookahead, sniffer: sniffer) }) {
                case .needMore: break
                case .sniffed(let mime, _): sniffed = mime; window = Data()
                case .refused(let code, let message): return .failure(Reason(code: code, message: message))
                }
            }
            if chunk.isEmpty { break }
        }
        guard bytes > 0 else { return .failure(Reason(code: .emptyBody, message: "the file is empty")) }
        guard let sniffed else { return .failure(Reason(code: .ioError, message: "the file could not be typed")) }
        return Result { () throws(Reason) in
            .init(path: path, sniffedMIME: sniffed, bytes: bytes, sha256: try digest.finalizeHex())
        }
    }
}
