/// The one decision every path makes once the bytes are typed: is this type in the table, may
/// this request have it, and does its size fit the kind's limit. Used while streaming (with the
/// declared Content-Length) and by `LocalMediaInspector` (with the file's size).
enum MediaPolicy {
    /// - Parameters:
    ///   - sniffed: libmagic's MIME type for the bytes.
    ///   - size: the size known so far, and what it is ("Content-Length", "the file's size").
    static func admit(sniffed: String, size: (value: Int64, source: String)?,
                      limits: AttachFetchConfiguration.SizeLimits,
                      imagesOnly: Bool) -> Result<MediaType, Refusal> {
        guard let type = MediaType.forSniffedMIME(sniffed) else {
            return .failure(Refusal(code: .unsupportedType,
                                  message: "the bytes are \(sniffed), which is not an attachment type iOS accepts"))
        }
        if imagesOnly && type.kind != .image {
            return .failure(Refusal(code: .unsupportedType, message: "the bytes are \(sniffed), but an avatar must be an image"))
        }
        let limit = limits.limit(for: type.kind)
        if let size, size.value > limit {
            return .failure(Refusal(code: .sizeLimitExceeded,
                                  message: "\(size.source) \(size.value) exceeds the \(type.kind.rawValue) limit of \(limit) bytes"))
        }
        return .success(type)
    }

    /// Why the bytes are refused.
    struct Refusal: Error {
        let code: ReasonCode
        let message: String
    }
}
