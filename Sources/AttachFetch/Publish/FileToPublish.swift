/// A ready file as publishing stores it: under `<sha256>.<suffix>`.
struct FileToPublish: Sendable {
    var path: String
    /// Known for the delivered file (hashed as it streamed in); computed for the others.
    var sha256: String?
    var suffix: String
}
