import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// What makes two requests' results the same, beyond the pipeline's own settings (thumbnail
/// size, converting on or off, limits): the URL, the clip, the thumbnail time, the role and
/// the platforms.
struct ResultKey: Hashable, Sendable {
    let url: String
    let clip: [Double]?
    let thumbnailTime: Double?
    let role: AttachmentDescriptor.Role?
    let platforms: [Platform]

    init(_ request: AttachmentRequest, platforms: Set<Platform>) {
        url = request.url
        clip = request.clip.map { [$0.x, $0.y, $0.width, $0.height] }
        thumbnailTime = request.options?.thumbnailTime
        role = request.role
        self.platforms = platforms.sorted()
    }
}

/// One finished piece of work: its descriptor (files in the work store) and the files, which
/// are removed when the last holder lets go — the callers handed it, and the cache while it
/// keeps the entry. Holders are counted explicitly (not left to deinit) so that files are
/// gone the moment the last caller has linked its copy.
final class SharedResult: Sendable {
    let descriptor: AttachmentDescriptor
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

    /// Starts with one holder: the work that made it.
    init(descriptor: AttachmentDescriptor, files: [String], publishedFiles: [String], headers: CacheHeaders,
         lifetime: Duration?, store: WorkStore?) {
        self.descriptor = descriptor
        self.files = files
        self.publishedFiles = publishedFiles
        self.headers = headers
        self.lifetime = lifetime
        // The files keep the store's directory: held (the work that made them holds it now,
        // so this only counts) until the last holder of the result lets go.
        self.store = files.isEmpty ? nil : store
        if !files.isEmpty { _ = try? store?.acquire() }
        var total: Int64 = 0
        for file in files {
            var status = stat()
            if stat(file, &status) == 0 { total += Int64(status.st_size) }
        }
        bytes = total
    }

    func retain() { holders.add(1, ordering: .relaxed) }

    func release() {
        guard holders.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        for file in files { unlink(file) }
        store?.release()
    }

    /// Every file it names is still there (nothing removed them behind the cache's back).
    var isIntact: Bool { (files + publishedFiles).allSatisfy { access($0, F_OK) == 0 } }
}
