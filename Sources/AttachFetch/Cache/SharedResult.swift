import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
internal import Tracing

/// What makes two requests' results the same, beyond the pipeline's own settings (thumbnail
/// size, converting on or off, limits): the URL, the clip, the thumbnail time, the role and
/// the platforms, and transcoding settings of the request's own.
struct ResultKey: Hashable, Sendable {
    let url: String
    let clip: [Double]?
    let thumbnailTime: Double?
    let role: AttachmentDescriptor.Role?
    let platforms: [Platform]
    /// Published encrypted: other objects and keys than the same request in plaintext.
    let encrypted: Bool
    /// The request's own transcoding, when it differs from the pipeline's (nil: the pipeline's).
    let transcoding: TranscodeSettings?
    /// The crop and focal point asked for (nil: none).
    let crop: PictureCrop?

    init(_ request: AttachmentRequest, platforms: Set<Platform>, encrypted: Bool = false, pipeline: TranscodeSettings? = nil) {
        self.encrypted = encrypted
        transcoding = request.transcoding == pipeline ? nil : request.transcoding
        url = request.url
        clip = request.clip.map { [$0.x, $0.y, $0.width, $0.height] }
        thumbnailTime = request.options?.thumbnailTime
        role = request.role
        crop = request.pictureCrop
        self.platforms = platforms.sorted()
    }
}

/// One finished piece of work: its descriptor (files in the work store) and the files, which
/// are removed when the last holder lets go — the callers handed it, and the cache while it
/// keeps the entry. Holders are counted explicitly (not left to deinit) so that files are
/// gone the moment the last caller has linked its copy.
final class SharedResult: Sendable {
    let descriptor: AttachmentDescriptor
    /// The span of the work that made it, for the callers it is handed to (a link).
    let madeBy: ServiceContext?
    /// The files in the work store (delivered file, thumbnail, variants).
    let files: [String]
    /// Published copies: never removed here, but a result whose copies are gone is not reused.
    let publishedFiles: [String]
    let bytes: Int64
    let headers: CacheHeaders
    /// How long it may be reused (nil: never).
    let lifetime: Duration?
    private let holders = Atomic<Int>(1)
    private let store: WorkStore?
    /// The unnamed files among `files`: open while the result is held, freed with it.
    private let unnamed: Locked<[UnnamedFile]>

    /// Starts with one holder: the work that made it. `sizes`: the files' sizes where their
    /// writers know them; any other file is asked (a stat per file).
    init(descriptor: AttachmentDescriptor, files: [String], publishedFiles: [String], headers: CacheHeaders,
         lifetime: Duration?, store: WorkStore?, unnamed: [UnnamedFile] = [], sizes: [String: Int64] = [:],
         madeBy: ServiceContext? = nil) {
        self.madeBy = madeBy
        self.descriptor = descriptor
        self.files = files
        self.publishedFiles = publishedFiles
        self.headers = headers
        self.lifetime = lifetime
        self.unnamed = Locked(unnamed)
        // The files keep the store's directory: held (the work that made them holds it now,
        // so this only counts) until the last holder of the result lets go.
        self.store = files.isEmpty ? nil : store
        if !files.isEmpty { _ = try? store?.acquire() }
        var total: Int64 = 0
        for file in files {
            if let size = sizes[file] ?? UnnamedFile.size(of: file) {
                total += size
                continue
            }
            var status = stat()
            if stat(file, &status) == 0 { total += Int64(status.st_size) }
        }
        bytes = total
    }

    func retain() { holders.add(1, ordering: .relaxed) }

    func release() {
        guard holders.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        for file in files where UnnamedFile.descriptor(in: file) == nil { unlink(file) }
        let freed = unnamed.withLock { files in
            defer { files = [] }
            return files
        }
        _ = freed  // closed here, outside the lock
        store?.release()
    }

    /// Every file it names is still there (nothing removed them behind the cache's back).
    var isIntact: Bool {
        // An unnamed file cannot be removed behind our back: it has no name.
        (files + publishedFiles).allSatisfy { UnnamedFile.descriptor(in: $0) != nil || access($0, F_OK) == 0 }
    }
}
