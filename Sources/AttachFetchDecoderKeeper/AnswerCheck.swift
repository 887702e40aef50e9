import AttachFetchCore
import AttachFetchDecoderProtocol
#if canImport(Glibc)
import Glibc
#endif

/// The keeper's reading of a decoder's answer: the worker proposes, the pipeline decides. A
/// worker taken over by a file could otherwise name any file the pipeline can read as its
/// output (to have it delivered and published), or any it can write (to have it removed), and
/// state a size and hash for content-addressed publishing that are not the file's.
///
/// Every file an answer names must be the job's own output: its output base and an extension
/// the job may make, a regular file (never a link), on a descriptor the pipeline gave it or in
/// the job's place. Its size is the keeper's `fstat`; the SHA-256 of a delivered file is the
/// keeper's own, read from the file itself; what the worker said of either is not used. A
/// delivered file's bytes are sniffed with libmagic and must be of its extension's type, and
/// of the type the answer declares for it; a thumbnail's must start as a JPEG or PNG does. An
/// answer that breaks a rule is refused whole: the keeper ends that worker (`WorkerThread`).
///
/// From a worker process, each file is then sealed: copied, in the pass that hashes it, into
/// an unnamed file of the keeper's (`UnnamedFile`), which the answer names instead, and the
/// worker's own is let go. A worker keeps the descriptors and paths of what it wrote and could
/// rewrite them after its answer, between the hash and the publishing; the copy has no name
/// and no descriptor in any worker. Where the file system makes no unnamed file, the worker's
/// file is used as before.
package enum AnswerCheck {
    /// `answer` with every size and hash the keeper's own, or the reason it is refused.
    /// - Parameter sniffer: the calling thread's libmagic handle, for the delivered files.
    /// - Parameter directory: where each file is copied out of the worker's reach (the job's
    ///   place in the work store, where results are kept); nil: not copied.
    package static func verify(_ answer: DecodeAnswer, for job: DecodeJob, sealingIn directory: String?,
                               sniffer: () -> MagicSniffer?) -> Result<DecodeAnswer, Reason> {
        if answer.failure != nil {
            // A failure names no file; one that does is lying about something.
            return answer.files.isEmpty ? .success(answer) : .failure(refused("a failure that names files"))
        }
        let made = [answer.thumbnail != nil, answer.normalized != nil, answer.probed != nil,
                    answer.remuxed != nil, answer.transcoded != nil].filter { $0 }.count
        guard made == 1, answer.isWhatJobMakes(job) else { return .failure(refused("an answer of another kind than its job")) }
        guard let base = job.outputBase else {
            return answer.files.isEmpty ? .success(answer) : .failure(refused("files for a job that writes none"))
        }
        let allowed = Set(job.outputExtensions)
        var checked = answer
        for file in answer.files {
            guard let dot = file.lastIndex(of: "."), case let format = String(file[file.index(after: dot)...]),
                  String(file[..<dot]) == base, allowed.contains(format) else {
                return .failure(refused("an output it was not asked for"))
            }
            let delivered = file != answer.thumbnail?.file && file != answer.probed?.poster?.file
            let facts: Facts
            switch Self.facts(of: file, hashing: delivered, sealingIn: directory) {
            case .success(let read): facts = read
            case .failure(.notARegularFile): return .failure(refused("an output that is not a regular file of its own"))
            case .failure(.unsealable):
                // Never delivered unsealed: the worker could still write what it names. Not the
                // media's fault, nor the worker's (ioError: never cached).
                return .failure(Reason(code: .ioError, message: "the decoder's output could not be sealed: no unnamed file could be made in the work directory (its descriptor budget is spent, or its file system has no O_TMPFILE); the attachment fails rather than deliver an unsealed file"))
            }
            let sniffed = delivered ? sniffer().flatMap { magic in try? facts.prefix.withUnsafeBytes(magic.mimeType).get() } : nil
            guard delivered ? sniffed.map(Self.extensions(ofMIME:))?.contains(format) == true : startsAsImage(facts.prefix, format) else {
                return .failure(refused("a .\(format) file whose bytes are not of that type"))
            }
            // The declared type becomes the delivered MIME type and UTI: it must be the bytes'.
            if let declared = answer.declaredType(of: file), let sniffed, !Self.extensions(ofMIME: sniffed).contains(declared.fileExtension) {
                return .failure(refused("a type (\(declared.fileExtension)) its file's bytes are not"))
            }
            checked.replaceFacts(of: file, bytes: facts.bytes, sha256: facts.sha256)
            if let copy = facts.copy {
                checked.replacePath(file, with: UnnamedFile.path(of: copy.path, withExtension: format))
                checked.sealed.append(copy)
                checked.superseded.append(file)
            }
        }
        return .success(checked)
    }

    /// Why a failure a worker stated is refused, or nil when it is in a decoder's words: one
    /// of `decoderFailureCodes`, and a message that `isShowable`. Checked where the worker's
    /// answer is read (`DecoderProcess.run`), apart from the keeper's own failures, which use
    /// codes no decoder may (`decoderCrashed`).
    package static func refusal(ofFailure failure: Reason) -> Reason? {
        guard decoderFailureCodes.contains(failure.code) else { return refused("a failure code no decoder gives") }
        guard isShowable(failure.message) else { return refused("a failure message over \(maxMessageBytes) bytes or with control characters") }
        return nil
    }

    /// The codes the decoding code gives (AttachFetchMedia and what it calls): any other from
    /// a worker, `decoderCrashed` or `deadlineExceeded` among them, would be a worker speaking
    /// for the keeper, and a code of the transfer's would blame the origin.
    static let decoderFailureCodes: Set<ReasonCode> = [.corruptMedia, .unsupportedType, .pixelLimitExceeded,
                                                       .sizeLimitExceeded, .ioError, .cancelled]

    /// The longest failure message taken from a worker, in UTF-8 bytes. Decoders' own are a
    /// line or a few (libvips' error buffer); the descriptor, the logs and the inspector show it.
    static let maxMessageBytes = 4_096

    /// Whether a worker's failure message may be shown as it is: within `maxMessageBytes`,
    /// and no control character but a line break or a tab (libvips' messages are lines).
    /// Reading it from the wire has already made it valid UTF-8 (a bad byte becomes U+FFFD).
    static func isShowable(_ message: String) -> Bool {
        message.utf8.count <= maxMessageBytes && !message.unicodeScalars.contains {
            ($0.value < 0x20 && $0 != "\n" && $0 != "\t") || (0x7F...0x9F).contains($0.value)
        }
    }

    private static func refused(_ what: String) -> Reason {
        Reason(code: .decoderCrashed, message: "the decoder process answered \(what); the answer was refused and the process ended")
    }

    /// What the keeper reads of an output: its size, its SHA-256 when hashed, its first bytes,
    /// and its sealed copy.
    typealias Facts = (bytes: Int64, sha256: String?, prefix: [UInt8], copy: UnnamedFile?)

    /// Why an output has no facts: it is not a regular file of its own, or it was to be sealed
    /// and no copy could be made (or written).
    enum FactsFailure: Error { case notARegularFile, unsealable }

    /// The file's size, its SHA-256 when `hashing`, and with `sealing` a copy of it made in the
    /// same pass: read through the pipeline's own descriptor for a working path, or opened
    /// without following a link. Nil for anything but a regular file.
    static func facts(of path: String, hashing: Bool, sealingIn directory: String? = nil) -> Result<Facts, FactsFailure> {
        let working = UnnamedFile.descriptor(in: path)
        let owned = working == nil
        let fd = working ?? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return .failure(.notARegularFile) }
        defer { if owned { close(fd) } }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return .failure(.notARegularFile) }
        let bytes = Int64(status.st_size)
        // Read-only: the next job's worker may read it as its source.
        let copy = directory.flatMap { UnnamedFile.create(in: $0, mode: UnnamedFile.readOnlyMode) }
        if directory != nil && copy == nil { return .failure(.unsealable) }
        guard hashing || copy != nil else {
            var prefix = [UInt8](repeating: 0, count: 8)
            let count = prefix.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
            return .success((bytes, nil, Array(prefix.prefix(max(0, count))), nil))
        }
        // pread: a working file's offset is shared with its writer. What is hashed is what is
        // copied, and the size is what was read: a worker still writing changes neither.
        let digest = SHA256Digest()
        // A thumbnail's few kilobytes in one read, larger files in 64 KiB steps.
        var buffer = [UInt8](repeating: 0, count: Int(min(max(bytes, 1), 1 << 16)))
        var offset: Int64 = 0
        var prefix: [UInt8] = []
        while offset < bytes {
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, min($0.count, Int(bytes - offset)), off_t(offset)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return .failure(.notARegularFile) }
            if hashing { buffer.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[..<count])) } }
            if let copy, !buffer.withUnsafeBytes({ SafeFile.writeAll(copy.descriptor, UnsafeRawBufferPointer(rebasing: $0[..<count]), at: offset) }) {
                return .failure(.unsealable)
            }
            if offset == 0 { prefix = Array(buffer.prefix(min(count, 4_096))) }
            offset += Int64(count)
        }
        guard hashing else { return .success((bytes, nil, prefix, copy)) }
        guard let hex = try? digest.finalizeHex() else { return .failure(.notARegularFile) }
        return .success((bytes, hex, prefix, copy))
    }

    /// The extensions a libmagic answer allows: MPEG-4's brands are many, and the pipeline
    /// probes what it delivers as MPEG-4 by its streams.
    static func extensions(ofMIME mime: String) -> Set<String> {
        guard let type = MediaType.forSniffedMIME(mime) else { return [] }
        return [.mp4, .m4a, .m4v].contains(type) ? ["mp4", "m4a", "m4v"] : [type.fileExtension]
    }

    /// A thumbnail's first bytes: JPEG's start of image, or PNG's signature.
    static func startsAsImage(_ prefix: [UInt8], _ format: String) -> Bool {
        switch format {
        case "jpg": return prefix.starts(with: [0xFF, 0xD8, 0xFF])
        case "png": return prefix.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        default: return false
        }
    }
}

extension DecodeAnswer {
    /// Whether the one thing this answer carries is what `job` makes.
    func isWhatJobMakes(_ job: DecodeJob) -> Bool {
        switch job {
        case .thumbnail: return thumbnail != nil
        case .probe: return probed != nil
        case .normalize: return normalized != nil || transcoded != nil
        case .remux: return remuxed != nil || transcoded != nil
        case .transcode: return transcoded != nil
        }
    }

    /// The type the answer declares for `file`, where it declares one (a converted image, a
    /// transcode): what the descriptor will state as the delivered file's.
    func declaredType(of file: String) -> MediaType? {
        if normalized?.file == file { return normalized?.type }
        if transcoded?.file == file { return transcoded?.type }
        return nil
    }

    /// The keeper's size and hash in place of the worker's, for the output at `file`.
    mutating func replaceFacts(of file: String, bytes: Int64, sha256: String?) {
        if thumbnail?.file == file { thumbnail?.bytes = bytes }
        if probed?.poster?.file == file { probed?.poster?.bytes = bytes }
        guard let sha256 else { return }
        if normalized?.file == file {
            normalized?.bytes = bytes
            normalized?.sha256 = sha256
        }
        if remuxed?.file == file {
            remuxed?.bytes = bytes
            remuxed?.sha256 = sha256
        }
        if transcoded?.file == file {
            transcoded?.bytes = bytes
            transcoded?.sha256 = sha256
        }
    }
}
