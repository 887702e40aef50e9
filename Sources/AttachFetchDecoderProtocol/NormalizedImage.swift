import AttachFetchCore

/// An image made deliverable: a format iOS shows, under the image limit.
package struct NormalizedImage: Sendable, Codable {
    package var file: String
    package var type: MediaType
    package var bytes: Int64
    package var sha256: String
    /// The delivered size, and the original's, both as displayed.
    package var width: Int
    package var height: Int
    package var sourceWidth: Int
    package var sourceHeight: Int
    package var transforms: [AttachmentDescriptor.Transform]

    package init(file: String, type: MediaType, bytes: Int64, sha256: String, width: Int, height: Int, sourceWidth: Int, sourceHeight: Int, transforms: [AttachmentDescriptor.Transform]) {
        self.file = file
        self.type = type
        self.bytes = bytes
        self.sha256 = sha256
        self.width = width
        self.height = height
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.transforms = transforms
    }
}
