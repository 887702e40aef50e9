/// Errors the library throws (a batch itself never throws: its problems become descriptors).
/// A struct with a private code so that new errors can be added without breaking callers.
public struct AttachFetchError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case invalidConfiguration
        case invalidClip
        case libraryInitialisation
        case outputDirectory
        case invalidPayload
        case objectStore
    }

    private let code: Code
    /// A sentence for people, with the underlying library's own message where there is one.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message, for people.
    public var description: String { message }

    /// A setting out of range or one that cannot work (timeouts, limits, proxy, publish directory,
    /// certificates, platforms, CIDR ranges, decoder executable).
    public static func invalidConfiguration(_ message: String) -> AttachFetchError { .init(.invalidConfiguration, message) }
    /// A clipping rectangle with no area or outside the unit square.
    public static func invalidClip(_ message: String) -> AttachFetchError { .init(.invalidClip, message) }
    /// A C library (libcurl, libmagic, libvips) failed to start; the message is its own.
    public static func libraryInitialisation(_ message: String) -> AttachFetchError { .init(.libraryInitialisation, message) }
    /// A directory that cannot be made, read or written (output, working or publish directory).
    public static func outputDirectory(_ message: String) -> AttachFetchError { .init(.outputDirectory, message) }
    /// A push payload that is not a JSON object.
    public static func invalidPayload(_ message: String) -> AttachFetchError { .init(.invalidPayload, message) }

    /// The object store cannot be used: no such bucket, credentials refused, unreachable. The
    /// message holds the store's own error code and words, never a credential.
    public static func objectStore(_ message: String) -> AttachFetchError { .init(.objectStore, message) }

    /// Compare kinds, ignoring the message: `error ~= AttachFetchError.invalidClip("")`.
    public static func ~= (pattern: AttachFetchError, value: any Error) -> Bool {
        (value as? AttachFetchError)?.code == pattern.code
    }
}
