/// attach-fetch's version, written here only: `--version`, the `User-Agent` of every request
/// (transfers and the object store) and the service's traces read it. No release is tagged
/// yet; CHANGELOG.md dates its sections.
package enum Release {
    package static let version = "0.1.0-dev"
    /// The `User-Agent` attach-fetch sends.
    package static let userAgent = "attach-fetch/\(version)"
}
