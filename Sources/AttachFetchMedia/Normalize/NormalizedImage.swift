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
}
