#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A platform whose devices show notification media, with its own limits.
public enum Platform: String, Codable, Sendable, CaseIterable, Comparable {
    /// UNNotificationAttachment: the table and size limits of `AttachFetchConfiguration`.
    case ios
    /// FCM notification images: a still JPEG, PNG or BMP of at most 1 MB; no audio, video or animation.
    case android

    /// FCM shows notification images up to this size ("Android has 1MB image size limit").
    public static let androidImageLimit: Int64 = 1_000_000

    /// Orders platforms by name.
    public static func < (a: Platform, b: Platform) -> Bool { a.rawValue < b.rawValue }

    /// Parses "ios,android".
    public static func list(_ text: String) throws(AttachFetchError) -> Set<Platform> {
        var platforms = Set<Platform>()
        for name in text.split(separator: ",") {
            let trimmed = TextFormat.trimmed(name).lowercased()
            guard let platform = Platform(rawValue: trimmed) else {
                throw .invalidConfiguration("unknown platform '\(trimmed)' (known: \(allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            platforms.insert(platform)
        }
        guard !platforms.isEmpty else { throw .invalidConfiguration("no platform named") }
        return platforms
    }
}

extension Platform {
    /// What FCM shows as a notification image, in the words reasons use: the one statement
    /// of the rule (the inspector's `ANDROID_STILL_TYPES` lists the same three types).
    package static let androidImageRule = "a still image (JPEG, PNG or BMP) of at most 1 MB"

    /// Whether Android shows the delivered file as it is: a still JPEG or PNG within 1 MB, the
    /// rule's types that attach-fetch delivers (a BMP is `unsupportedType`, never delivered).
    package static func androidShows(_ type: MediaType, bytes: Int64) -> Bool {
        (type == .jpeg || type == .png) && bytes <= androidImageLimit
    }
}
