#if canImport(UserNotifications)
import Foundation
import UserNotifications

extension FetchedAttachment {
    /// The options `UNNotificationAttachment(identifier:url:options:)` takes: the type hint and
    /// the thumbnail options, under Apple's keys.
    public var notificationOptions: [AnyHashable: Any] {
        var options = thumbnailOptions.notificationOptions
        if let typeHint { options[UNNotificationAttachmentOptionsTypeHintKey] = typeHint }
        return options
    }

    /// The attachment for the notification's content. iOS moves the file into its own store.
    public func notificationAttachment() throws -> UNNotificationAttachment {
        try UNNotificationAttachment(identifier: identifier, url: fileURL, options: notificationOptions)
    }
}
extension ThumbnailOptions {
    /// The thumbnail options under Apple's keys, for `UNNotificationAttachment(identifier:url:options:)`:
    /// for a plain attachment the extension fetched itself, those of
    /// `EncryptedPayload.plainAttachmentOptions(in:)` whose URL it fetched.
    public var notificationOptions: [AnyHashable: Any] {
        var options: [AnyHashable: Any] = [:]
        if let rect = clippingRect {
            options[UNNotificationAttachmentOptionsThumbnailClippingRectKey] =
                CGRect(x: rect.x, y: rect.y, width: rect.width, height: rect.height).dictionaryRepresentation
        }
        if let time { options[UNNotificationAttachmentOptionsThumbnailTimeKey] = time }
        if let hidden { options[UNNotificationAttachmentOptionsThumbnailHiddenKey] = hidden }
        return options
    }
}
#endif
