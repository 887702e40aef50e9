import Foundation

/// One encrypted attachment as the rewritten payload carries it, under
/// `userInfo["attach-fetch"]["attachments"]` (docs/payloads.md, "Encrypted media").
public struct EncryptedAttachment: Sendable, Equatable {
    /// The identifier for `UNNotificationAttachment`.
    public var identifier: String
    /// Where the ciphertext is published.
    public var url: URL
    /// The 16-byte key, base64url.
    public var key: String
    /// Lower-case hex SHA-256 of the plaintext, checked after decryption.
    public var sha256: String
    /// The plaintext's size in bytes, when the payload gives it: a larger stream is refused.
    public var bytes: Int64?
    /// The file extension the decrypted file gets (`jpg`, `mp4`): what iOS reads the type from.
    public var fileExtension: String
    /// The Uniform Type Identifier, for `UNNotificationAttachmentOptionsTypeHintKey`.
    public var typeHint: String?
    /// The thumbnail options under Apple's keys (`UNNotificationAttachmentOptionsThumbnail…`),
    /// as JSON, passed through as the payload gives them.
    public var thumbnailOptions: ThumbnailOptions

    public init(identifier: String, url: URL, key: String, sha256: String, bytes: Int64? = nil,
                fileExtension: String, typeHint: String? = nil, thumbnailOptions: ThumbnailOptions = .init()) {
        self.identifier = identifier
        self.url = url
        self.key = key
        self.sha256 = sha256
        self.bytes = bytes
        self.fileExtension = fileExtension
        self.typeHint = typeHint
        self.thumbnailOptions = thumbnailOptions
    }
}

/// The thumbnail options `UNNotificationAttachment` takes.
public struct ThumbnailOptions: Sendable, Equatable {
    /// `UNNotificationAttachmentOptionsThumbnailClippingRectKey`, in the unit square.
    public var clippingRect: (x: Double, y: Double, width: Double, height: Double)?
    /// `UNNotificationAttachmentOptionsThumbnailTimeKey`: seconds into a video.
    public var time: Double?
    /// `UNNotificationAttachmentOptionsThumbnailHiddenKey`.
    public var hidden: Bool?

    public init(clippingRect: (x: Double, y: Double, width: Double, height: Double)? = nil, time: Double? = nil, hidden: Bool? = nil) {
        self.clippingRect = clippingRect
        self.time = time
        self.hidden = hidden
    }

    public static func == (a: ThumbnailOptions, b: ThumbnailOptions) -> Bool {
        a.time == b.time && a.hidden == b.hidden && a.clippingRect.map { [$0.x, $0.y, $0.width, $0.height] }
            == b.clippingRect.map { [$0.x, $0.y, $0.width, $0.height] }
    }
}

/// A plain attachment's thumbnail options, as attach-fetch chose them (the square around what
/// matters, a video's poster time), listed under `attach-fetch.plain`.
public struct PlainAttachmentOptions: Sendable, Equatable {
    /// The attachment's identifier, as the descriptor's.
    public var identifier: String
    /// The URL the payload carries at its key: the one the extension fetches.
    public var url: URL
    public var thumbnailOptions: ThumbnailOptions
}

/// Reads the encrypted attachments, and the plain ones' thumbnail options, from a
/// notification's `userInfo`.
public enum EncryptedPayload {
    /// The payload key the service's rewrite writes, beside `aps`.
    public static let key = "attach-fetch"

    /// The attachments listed under `attach-fetch`, in order. A payload without the key has
    /// none; one whose entries are malformed is `malformedPayload`, naming the field.
    public static func attachments(in userInfo: [AnyHashable: Any]) throws(DeviceFetchError) -> [EncryptedAttachment] {
        guard let block = userInfo[key] else { return [] }
        guard let object = block as? [String: Any], let list = object["attachments"] as? [Any] else {
            throw DeviceFetchError(.malformedPayload, "\(key) must be an object with an attachments array")
        }
        return try list.enumerated().map { (index, item) throws(DeviceFetchError) in
            func fail(_ field: String) -> DeviceFetchError {
                DeviceFetchError(.malformedPayload, "\(key).attachments[\(index)].\(field) is missing or malformed")
            }
            guard let entry = item as? [String: Any] else { throw fail("") }
            guard let text = entry["url"] as? String, let url = URL(string: text),
                  ["http", "https"].contains(url.scheme?.lowercased() ?? "") else { throw fail("url") }
            guard let key = entry["key"] as? String else { throw fail("key") }
            guard let sha256 = entry["sha256"] as? String, sha256.count == 64 else { throw fail("sha256") }
            guard let fileExtension = entry["ext"] as? String, !fileExtension.isEmpty,
                  fileExtension.allSatisfy({ $0.isLetter || $0.isNumber }) else { throw fail("ext") }
            guard let options = thumbnailOptions(entry["options"]) else { throw fail("options") }
            return EncryptedAttachment(identifier: entry["id"] as? String ?? "attachment-\(index)", url: url, key: key,
                                       sha256: sha256.lowercased(), bytes: number(entry["bytes"]).map { Int64($0) },
                                       fileExtension: fileExtension, typeHint: entry["type"] as? String,
                                       thumbnailOptions: options)
        }
    }

    /// The thumbnail options attach-fetch chose for plain attachments, which the payload
    /// carries at their own keys (the extension fetches those itself), listed under
    /// `attach-fetch.plain` with their URLs. Look an attachment's up by the URL it was fetched
    /// from; one not listed has no options beyond the payload's own.
    public static func plainAttachmentOptions(in userInfo: [AnyHashable: Any]) throws(DeviceFetchError) -> [PlainAttachmentOptions] {
        guard let block = userInfo[key] else { return [] }
        guard let object = block as? [String: Any] else { throw DeviceFetchError(.malformedPayload, "\(key) must be an object") }
        guard let list = object["plain"] else { return [] }
        guard let entries = list as? [Any] else { throw DeviceFetchError(.malformedPayload, "\(key).plain must be an array") }
        return try entries.enumerated().map { (index, item) throws(DeviceFetchError) in
            guard let entry = item as? [String: Any], let text = entry["url"] as? String, let url = URL(string: text),
                  let options = thumbnailOptions(entry["options"]) else {
                throw DeviceFetchError(.malformedPayload, "\(key).plain[\(index)] is malformed")
            }
            return PlainAttachmentOptions(identifier: entry["id"] as? String ?? "attachment-\(index)", url: url, thumbnailOptions: options)
        }
    }

    /// Apple's thumbnail keys read from an entry's `options` (none: empty options); nil when
    /// they are malformed.
    private static func thumbnailOptions(_ value: Any?) -> ThumbnailOptions? {
        var options = ThumbnailOptions()
        guard let value else { return options }
        guard let given = value as? [String: Any] else { return nil }
        if let rect = given["UNNotificationAttachmentOptionsThumbnailClippingRectKey"] {
            guard let rect = rect as? [String: Any], let x = number(rect["X"]), let y = number(rect["Y"]),
                  let width = number(rect["Width"]), let height = number(rect["Height"]) else { return nil }
            options.clippingRect = (x, y, width, height)
        }
        options.time = number(given["UNNotificationAttachmentOptionsThumbnailTimeKey"])
        options.hidden = given["UNNotificationAttachmentOptionsThumbnailHiddenKey"] as? Bool
        return options
    }

    private static func number(_ value: Any?) -> Double? {
        if let number = value as? NSNumber { return number.doubleValue }
        return value as? Double
    }
}
