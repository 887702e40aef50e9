import Foundation

/// One step of a path into a JSON document.
public enum PayloadPathComponent: Sendable, Hashable {
    /// A key of an object.
    case key(String)
    /// A position in an array.
    case index(Int)
}

/// A media URL found in a push payload, with what the payload says about it.
public struct PayloadMedia: Sendable, Equatable {
    /// The URL string as the payload has it.
    public var url: String
    /// Where the URL string is, e.g. `fcm_options.image` or `"com.urbanairship.media_attachment".urls[0].url`.
    public var path: String
    /// The entry that `--strip-failed` removes when the attachment is not ready (the key, or
    /// the whole array element for lists of URL objects).
    public var entry: [PayloadPathComponent]
    /// The request's identifier: the provider's id where it gives one, else the path.
    public var identifier: String
    /// An attachment, or a communication notification's avatar.
    public var role: AttachmentDescriptor.Role
    /// The UNNotificationAttachment options the payload gives for it.
    public var options: AttachmentOptions?
    /// The clip the thumbnail uses (from Airship's `options.crop`).
    public var clip: ClippingRectangle?
    /// Which convention it was found by: "apns", "fcm", "onesignal", "airship", ...
    public var provider: String
    /// Where the URL string itself is (what `--rewrite` replaces).
    public var location: [PayloadPathComponent] = []
    /// The platforms whose devices read this key (FCM's shared `notification.image`:
    /// both; `message.android.notification.image`: Android; APNs keys: iOS).
    public var platforms: Set<Platform> = [.ios]

    /// The request the pipeline runs for it. `platforms`: the payload's (so that one URL
    /// under several keys is fetched once); default the key's own.
    public func request(avatarTimeout: Duration? = nil, platforms: Set<Platform>? = nil) -> AttachmentRequest {
        AttachmentRequest(url: url, identifier: identifier, clip: clip, role: role,
                          timeout: role == .avatar ? avatarTimeout : nil,
                          options: options, payloadPath: path, platforms: platforms ?? self.platforms)
    }
}

/// A lint finding about the payload itself.
public struct PayloadLintFinding: Codable, Sendable, Equatable {
    /// How serious a finding is: `error` (the notification will not show as meant; the CLI exits 1)
    /// or `warning`.
    public enum Severity: String, Codable, Sendable, CaseIterable {
        /// The payload will not show as intended.
        case error
        /// It may show, but not as well as it could.
        case warning
    }
    /// What was found, as a stable name (for example `androidImageTooLarge`).
    public var code: String
    /// How serious it is.
    public var severity: Severity
    /// A sentence for people.
    public var message: String
    /// Where in the payload (empty for the whole payload).
    public var path: String

    /// Makes a finding, for example a fake in a test.
    public init(code: String, severity: Severity, message: String, path: String) {
        self.code = code
        self.severity = severity
        self.message = message
        self.path = path
    }
}

/// A push payload (APNs, FCM v1, or a provider's APNs payload), parsed, searched for media in
/// the places push providers put it, and linted. Unknown structures are not searched: no
/// guessing over arbitrary strings.
public struct PushPayload: @unchecked Sendable {
    // @unchecked Sendable: `root` holds only JSONSerialization's immutable value types
    // (dictionaries, arrays, strings, numbers), never mutated after init.
    let root: Any
    /// The payload's size in bytes, as given.
    public let byteCount: Int

    /// Parses a payload; throws ``/AttachFetchCore/AttachFetchError`` unless it is a JSON object.
    public init(data: Data) throws(AttachFetchError) {
        guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]),
              object is [String: Any] else {
            throw .invalidPayload("the payload is not a JSON object")
        }
        root = object
        byteCount = data.count
    }

    // MARK: Finding media

    /// Every media URL in the recognised places, plus those at `extraKeyPaths` (dot-separated).
    public func media(extraKeyPaths: [String] = []) -> [PayloadMedia] {
        var found: [PayloadMedia] = []
        for base in apnsRoots() {
            found += apnsMedia(base)
        }
        for (prefix, key) in [([PayloadPathComponent](), "fcm_options"), ([.key("message"), .key("apns")], "fcm_options")] {
            found += string(at: prefix + [.key(key), .key("image")], provider: "fcm")
        }
        // FCM: notification.image is shown by both platforms; message.android.notification.image
        // only by Android (and wins there); data.image is for the app's own code on either.
        for prefix in [[PayloadPathComponent](), [.key("message")]] {
            found += string(at: prefix + [.key("notification"), .key("image")], provider: "fcm", platforms: [.ios, .android])
            found += string(at: prefix + [.key("data"), .key("image")], provider: "fcm", platforms: [.ios, .android])
        }
        found += string(at: [.key("message"), .key("android"), .key("notification"), .key("image")], provider: "fcm",
                        platforms: [.android])
        // OneSignal's REST API: big_picture for Android, ios_attachments (id → URL) for iOS.
        found += string(at: [.key("big_picture")], provider: "onesignal", platforms: [.android])
        if let attachments = value(at: [.key("ios_attachments")]) as? [String: Any] {
            for id in attachments.keys.sorted() where attachments[id] is String {
                found += string(at: [.key("ios_attachments"), .key(id)], provider: "onesignal", identifier: id)
            }
        }
        for keyPath in extraKeyPaths {
            let path = keyPath.split(separator: ".").map { PayloadPathComponent.key(String($0)) }
            found += string(at: path, provider: "custom")
        }
        // The same place can be reached by two conventions (an FCM message's APNs payload):
        // keep the first.
        var seen = Set<String>()
        return found.filter { seen.insert($0.path).inserted }
    }

    /// The APNs payload objects: the document itself, and an FCM v1 message's APNs payload.
    private func apnsRoots() -> [[PayloadPathComponent]] {
        var roots: [[PayloadPathComponent]] = [[]]
        if value(at: [.key("message"), .key("apns"), .key("payload")]) is [String: Any] {
            roots.append([.key("message"), .key("apns"), .key("payload")])
        }
        return roots
    }

    private func apnsMedia(_ base: [PayloadPathComponent]) -> [PayloadMedia] {
        var found: [PayloadMedia] = []
        // Custom keys used in the wild by hand-written service extensions.
        for key in ["image_url", "imageUrl", "image", "media_url", "mediaUrl", "attachment-url", "attachment_url"] {
            found += string(at: base + [.key(key)], provider: "apns")
        }
        // OneSignal: "att" maps ids to URLs (also under os_data); the avatar of a
        // communication notification sits in custom.a.
        for attPath in [base + [.key("att")], base + [.key("os_data"), .key("att")]] {
            if let att = value(at: attPath) as? [String: Any] {
                for id in att.keys.sorted() where att[id] is String {
                    found += string(at: attPath + [.key(id)], provider: "onesignal", identifier: id)
                }
            }
        }
        found += string(at: base + [.key("custom"), .key("a"), .key("communication"), .key("avatar_url")],
                        provider: "onesignal", identifier: "avatar", role: .avatar)
        found += airshipMedia(base + [.key("com.urbanairship.media_attachment")])
        found += string(at: base + [.key("ab"), .key("att"), .key("url")], provider: "braze")
        found += string(at: base + [.key("ct_mediaUrl")], provider: "clevertap")
        found += string(at: base + [.key("itbl"), .key("attachment-url")], provider: "iterable")
        found += string(at: base + [.key("CIO"), .key("push"), .key("image")], provider: "customerio")
        found += string(at: base + [.key("com.batch"), .key("at"), .key("u")], provider: "batch")
        return found
    }

    private func airshipMedia(_ base: [PayloadPathComponent]) -> [PayloadMedia] {
        guard let attachment = value(at: base) as? [String: Any] else { return [] }
        let options = attachment["options"] as? [String: Any]
        var attachmentOptions = AttachmentOptions()
        var clip: ClippingRectangle?
        if let crop = options?["crop"] as? [String: Any],
           let x = number(crop["x"]), let y = number(crop["y"]), let w = number(crop["width"]), let h = number(crop["height"]) {
            clip = try? ClippingRectangle(x: x, y: y, width: w, height: h)
            if clip != nil { attachmentOptions.clippingRect = .init(x: x, y: y, width: w, height: h) }
        }
        attachmentOptions.thumbnailTime = number(options?["time"])
        attachmentOptions.thumbnailHidden = options?["hidden"] as? Bool
        let finalOptions = attachmentOptions.isEmpty ? nil : attachmentOptions
        var found: [PayloadMedia] = []
        if attachment["url"] is String {
            found += string(at: base + [.key("url")], provider: "airship", entry: base)
        } else if let urls = attachment["url"] as? [Any] {
            for index in urls.indices where urls[index] is String {
                found += string(at: base + [.key("url"), .index(index)], provider: "airship")
            }
        }
        if let urls = attachment["urls"] as? [Any] {
            for index in urls.indices {
                let element = base + [.key("urls"), .index(index)]
                let id = (urls[index] as? [String: Any])?["url_id"] as? String
                found += string(at: element + [.key("url")], provider: "airship", identifier: id, entry: element)
            }
        }
        return found.map { media in
            var media = media
            media.options = finalOptions
            media.clip = clip
            return media
        }
    }

    /// A media entry for the string at `path`, if there is one.
    private func string(at path: [PayloadPathComponent], provider: String, identifier: String? = nil,
                        role: AttachmentDescriptor.Role = .attachment,
                        entry: [PayloadPathComponent]? = nil, platforms: Set<Platform> = [.ios]) -> [PayloadMedia] {
        guard let url = value(at: path) as? String else { return [] }
        let rendered = Self.render(path)
        return [PayloadMedia(url: url, path: rendered, entry: entry ?? path, identifier: identifier ?? rendered,
                             role: role, options: nil, clip: nil, provider: provider, location: path, platforms: platforms)]
    }

    /// The platforms the payload's media must show on: `configured`, plus Android when some
    /// media key is one Android reads.
    public static func platforms(for media: [PayloadMedia], configured: Set<Platform>) -> Set<Platform> {
        media.contains { $0.platforms.contains(.android) } ? configured.union([.android]) : configured
    }

    func value(at path: [PayloadPathComponent]) -> Any? {
        var current: Any? = root
        for component in path {
            switch component {
            case .key(let key): current = (current as? [String: Any])?[key]
            case .index(let index):
                guard let array = current as? [Any], array.indices.contains(index) else { return nil }
                current = array[index]
            }
        }
        return current
    }

    private func number(_ value: Any?) -> Double? { JSONNumber.value(value) }

    /// `a.b[0]`; keys that are not plain identifiers are quoted: `"com.batch".at.u`.
    static func render(_ path: [PayloadPathComponent]) -> String {
        var text = ""
        for component in path {
            switch component {
            case .index(let index): text += "[\(index)]"
            case .key(let key):
                let plain = !key.isEmpty && key.unicodeScalars.allSatisfy {
                    ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
                }
                if !text.isEmpty { text += "." }
                text += plain ? key : "\"\(key)\""
            }
        }
        return text
    }
}
