/// An image made deliverable: a format iOS shows, under the image limit.
struct NormalizedImage: Sendable, Codable {
    var file: String
    var type: MediaType
    var bytes: Int64
    var sha256: String
    /// The delivered size, and the original's, both as displayed.
    var width: Int
    var height: Int
    var sourceWidth: Int
    var sourceHeight: Int
    var transforms: [AttachmentDescriptor.Transform]
}
