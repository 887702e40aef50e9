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
                        thumbnailTime: Double? = nil, crop: PictureCrop? = PictureCrop()) -> AttachmentDescriptor {
        var descriptor = DescriptorBuilder(identifier: (path as NSString).lastPathComponent, url: "file://" + path,
                                           start: .now)
        let source: AttachmentWork.Source
        switch read(path) {
        case .success(let read): source = read
        case .failure(let refusal):
            if let sniffed = refusal.sniffed { descriptor.record(sniffed: sniffed, kind: nil) }
            if let type = refusal.type { descriptor.record(sniffed: type.mimeType, kind: type.kind) }
            if let whole = refusal.whole { descriptor.recordRefusedWhole(bytes: whole.bytes, sha256: whole.sha256) }
            return descriptor.failed(refusal.reason)
        }
        descriptor.record(sniffed: source.sniffedMIME, kind: nil)
        let ledger = FileLedger()
        defer { ledger.close() }
        var work = AttachmentWork(
            descriptor: descriptor, source: source,
            plan: .init(shape: .clip(clip), thumbnailTime: thumbnailTime,
                        convertedBase: thumbnailBase + ".delivered", thumbnailBase: thumbnailBase,
                        variantBase: thumbnailBase + ".variant", platforms: stages.configuration.platforms,
                        crop: crop?.crops == true ? crop : nil),
            ledger: ledger)
        if let reason = stages.run(Stage.afterDownload, on: &work) { return work.descriptor.failed(reason) }
        let file = work.admitted
        ledger.deliver(file.path)
        if let thumbnail = work.thumbnail { ledger.deliver(thumbnail.file) }
        for path in work.variantFiles.values { ledger.deliver(path) }
        return work.ready(file: file.path, thumbnailFile: work.thumbnail?.file, variantFiles: work.variantFiles)
    }

    /// Reads the file as the download reads a body, through the same `BodyAdmission`: the sniff
    /// window's type, the policy (against the file's size), the SHA-256, in one pass, holding
    /// only the sniff window in memory. A refusal comes with the type when only its size was
    /// refused.
    private func read(_ path: String) -> Result<AttachmentWork.Source, Refusal> {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            return .failure(Refusal(reason: Reason(code: .ioError, message: "cannot read \(path)")))
        }
        defer { try? handle.close() }
        var status = stat()
        let size = fstat(handle.fileDescriptor, &status) == 0 ? Int64(status.st_size) : nil
        let configuration = stages.configuration
        var admission = BodyAdmission(limits: configuration.sizeLimits, imagesOnly: false,
                                      normalize: configuration.normalize, transcode: configuration.transcode, sniffer: sniffer)
        let digest = SHA256Digest()
        var bytes: Int64 = 0
        while true {
            let chunk: Data
            do { chunk = try handle.read(upToCount: 64 * 1024) ?? Data() } catch {
                return .failure(Refusal(reason: Reason(code: .ioError, message: "cannot read \(path): \(error.localizedDescription)")))
            }
            if chunk.isEmpty && bytes == 0 { return .failure(Refusal(reason: Reason(code: .emptyBody, message: "the file is empty"))) }
            let step = chunk.withUnsafeBytes { admission.take($0, declared: size.map { ($0, "the file's size") }, complete: chunk.isEmpty) }
            switch step {
            case .hold: break
            case .write: chunk.withUnsafeBytes { digest.update($0) }
            case .writeHeld(let prefix): prefix.withUnsafeBytes { digest.update($0) }
            case .refuse(let reason):
                // Refused at the file's end: the whole file was held, and keeps its size and hash.
                var whole: (Int64, String)?
                if chunk.isEmpty {
                    let held = admission.heldBytes, hash = SHA256Digest()
                    held.withUnsafeBytes { hash.update($0) }
                    if let hex = try? hash.finalizeHex() { whole = (Int64(held.count), hex) }
                }
                return .failure(Refusal(reason: reason, sniffed: admission.sniffedMIME, type: admission.type, whole: whole))
            }
            bytes += Int64(chunk.count)
            if chunk.isEmpty { break }
        }
        guard let sniffed = admission.sniffedMIME, let type = admission.type else {
            return .failure(Refusal(reason: Reason(code: .ioError, message: "the file could not be typed")))
        }
        return Result { () throws(Refusal) in
            do throws(Reason) {
                return .init(path: path, sniffedMIME: sniffed, type: type, bytes: bytes, sha256: try digest.finalizeHex())
            } catch { throw Refusal(reason: error) }
        }
    }

    /// Why a file was refused, with its type when only its size was.
    private struct Refusal: Error {
        var reason: Reason
        var sniffed: String?
        var type: MediaType?
        var whole: (bytes: Int64, sha256: String)? = nil
    }
}
