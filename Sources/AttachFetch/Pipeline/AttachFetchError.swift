/// Errors the library throws (a batch itself never throws: its problems become descriptors).
/// A struct with a private code so that new errors can be added without breaking callers.
public struct AttachFetchError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case invalidConfiguration
        case invalidClip
        case libraryInitialisation
        case outputDirectory
        case invalidPayload
    }

    private let code: Code
    /// A sentence for people, with the underlying library's own message where there is one.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func invalidConfiguration(_ message: String) -> AttachFetchError { .init(.invalidConfiguration, message) }
    public static func invalidClip(_ message: String) -> AttachFetchError { .init(.invalidClip, message) }
    public static func libraryInitialisation(_ message: String) -> AttachFetchError { .init(.libraryInitialisation, message) }
    public static func outputDirectory(_ message: String) -> AttachFetchError { .init(.outputDirectory, message) }
    public static func invalidPayload(_ message: String) -> AttachFetchError { .init(.invalidPayload, message) }

    /// Compare kinds, ignoring the message: `error ~= AttachFetchError.invalidClip("")`.
    public static func ~= (pattern: AttachFetchError, value: any Error) -> Bool {
        (value as? AttachFetchError)?.code == pattern.code
    }
}
