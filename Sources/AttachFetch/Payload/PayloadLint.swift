import Foundation

extension PushPayload {
    /// The largest APNs payload Apple accepts for a regular notification.
    public static let apnsPayloadLimit = 4_096

    /// Findings about the payload that would stop a device from showing its media.
    public func lint(media: [PayloadMedia]) -> [PayloadLintFinding] {
        var findings: [PayloadLintFinding] = []
        func add(_ code: String, _ severity: PayloadLintFinding.Severity, _ message: String, _ path: String) {
            findings.append(PayloadLintFinding(code: code, severity: severity, message: message, path: path))
        }
        // Keys only Android reads have no service extension to confuse.
        let attachments = media.filter { $0.role == .attachment && $0.platforms.contains(.ios) }
        let apnsPayloads = apnsRootsWithAps()
        if !media.isEmpty && apnsPayloads.isEmpty {
            add("missingMutableContent", .error,
                "media is present but there is no aps dictionary: an iOS service extension only runs for aps.mutable-content: 1",
                "aps")
        }
        let isFCM = media.contains { $0.provider == "fcm" } || value(at: [.key("message")]) is [String: Any]
        for base in apnsPayloads {
            let aps = value(at: base + [.key("aps")]) as? [String: Any] ?? [:]
            let at = { (key: String) in Self.render(base + [.key("aps"), .key(key)]) }
            // FCM builds the APNs alert from the message's (or the legacy top level's)
            // notification title and body: that is an alert too.
            let hasAlert = Self.hasVisibleAlert(aps["alert"])
                || (isFCM && (Self.hasVisibleAlert(value(at: [.key("message"), .key("notification")]))
                              || Self.hasVisibleAlert(value(at: [.key("notification")]))))
            if !media.isEmpty && (aps["mutable-content"] as? NSNumber)?.intValue != 1 {
                add("missingMutableContent", .error,
                    "media is present but aps.mutable-content is not 1, so the service extension that attaches it never runs",
                    at("mutable-content"))
            }
            if !media.isEmpty && !hasAlert {
                add("noAlert", .error,
                    "no alert title, subtitle or body: a silent or badge-only push never runs a service extension",
                    at("alert"))
            }
            if (aps["content-available"] as? NSNumber)?.intValue == 1 && !hasAlert {
                add("contentAvailableWithoutAlert", .warning,
                    "content-available without an alert is a background push: it is throttled and shows nothing",
                    at("content-available"))
            }
            if let level = aps["interruption-level"] {
                let allowed = ["passive", "active", "time-sensitive", "critical"]
                if !((level as? String).map(allowed.contains) ?? false) {
                    add("invalidInterruptionLevel", .error,
                        "interruption-level must be one of \(allowed.joined(separator: ", ")), not \(level)", at("interruption-level"))
                }
            }
            if let score = aps["relevance-score"] {
                let value = JSONNumber.value(score)
                if !(value.map { (0...1).contains($0) } ?? false) {
                    add("relevanceScoreOutOfRange", .error, "relevance-score must be a number from 0 to 1, not \(score)",
                        at("relevance-score"))
                }
            }
            let size = base.isEmpty ? byteCount
                : ((try? JSONSerialization.data(withJSONObject: value(at: base) ?? [:])).map(\.count) ?? 0)
            if size > Self.apnsPayloadLimit {
                add("payloadTooLarge", .error,
                    "the APNs payload is \(size) bytes, over Apple's limit of \(Self.apnsPayloadLimit)", Self.render(base))
            }
        }
        for item in media {
            let scheme = item.url.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() } ?? ""
            if scheme != "http" && scheme != "https" {
                add("nonHTTPMediaURL", .error, "the media URL \(item.url) is not http(s); devices will not download it", item.path)
            }
        }
        // Two conventions' keys for the same notification (image_url and imageUrl, or
        // fcm_options.image and data.image): the extension will pick one, maybe the wrong one.
        // Firebase's own keys for one image (notification.image with apns.fcm_options.image and
        // android.notification.image) are one key when they carry the same URL, as Firebase
        // tells iOS senders to write them.
        var families: [String] = []
        for family in attachments.map(Self.family) where !families.contains(family) { families.append(family) }
        if families.count > 1, let second = attachments.first(where: { Self.family($0) == families[1] }) {
            add("multipleMediaKeys", .warning,
                "media is given under more than one key (\(attachments.map(\.path).joined(separator: ", "))); an extension usually reads only one",
                second.path)
        }
        return findings
    }

    func apnsRootsWithAps() -> [[PayloadPathComponent]] {
        var roots: [[PayloadPathComponent]] = []
        if value(at: [.key("aps")]) is [String: Any] { roots.append([]) }
        if value(at: [.key("message"), .key("apns"), .key("payload"), .key("aps")]) is [String: Any] {
            roots.append([.key("message"), .key("apns"), .key("payload")])
        }
        return roots
    }

    private static func hasVisibleAlert(_ alert: Any?) -> Bool {
        if let text = alert as? String { return !text.isEmpty }
        guard let alert = alert as? [String: Any] else { return false }
        return ["title", "subtitle", "body", "title-loc-key", "loc-key", "subtitle-loc-key"].contains { key in
            if let text = alert[key] as? String { return !text.isEmpty }
            return false
        }
    }

    /// The key a media entry belongs to, ignoring list positions and ids inside one key.
    private static func family(_ media: PayloadMedia) -> String {
        if media.provider == "fcm" && firebaseImageKeys.contains(media.path) { return "fcm image " + media.url }
        switch media.provider {
        case "onesignal", "airship":
            return media.provider + ":" + (media.path.split(separator: "[").first.map(String.init) ?? media.path)
                .replacingOccurrences(of: #"\.[^.]*$"#, with: "", options: .regularExpression)
        default:
            return media.path
        }
    }

    /// Where Firebase documents one notification image: one key when they carry the same URL.
    private static let firebaseImageKeys: Set<String> = [
        "notification.image", "fcm_options.image", "message.notification.image", "message.apns.fcm_options.image",
        "message.android.notification.image",
    ]

    // MARK: Stripping failed media

    /// The payload as JSON with the given entries removed (array elements are removed, not
    /// nulled). Keys are sorted, so the output is stable; `pretty: false` writes it compact.
    public func removing(_ entries: [[PayloadPathComponent]], pretty: Bool = true) -> Data {
        replacing([], removing: entries, pretty: pretty)
    }

    /// The payload as JSON with each string at `replacements`' paths replaced, then `entries`
    /// removed. Keys are sorted, so the output is stable. Numbers are written as they were
    /// read (a 19-digit id stays exact).
    public func replacing(_ replacements: [(path: [PayloadPathComponent], value: String)],
                          removing entries: [[PayloadPathComponent]], pretty: Bool = true) -> Data {
        replacing(replacements, removing: entries, adding: [], pretty: pretty)
    }

    /// As `replacing(_:removing:pretty:)`, and each of `additions` set at its path, whose last
    /// step is a key (made if missing) of an object that exists.
    func replacing(_ replacements: [(path: [PayloadPathComponent], value: String)],
                   removing entries: [[PayloadPathComponent]], adding additions: [(path: [PayloadPathComponent], value: Any)],
                   pretty: Bool) -> Data {
        var document = root
        for (path, value) in replacements { document = Self.set(path[...], to: value, in: document) }
        for (path, value) in additions { document = Self.set(path[...], to: value, in: document, making: true) }
        // Remove later array elements first, so earlier indices stay valid.
        let ordered = entries.sorted { Self.isAfter($0, $1) }
        for entry in ordered { document = Self.remove(entry[...], from: document) }
        let options: JSONSerialization.WritingOptions = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
                                                               : [.sortedKeys, .withoutEscapingSlashes]
        return (try? JSONSerialization.data(withJSONObject: document, options: options))
            ?? Data("{}".utf8)
    }

    private static func isAfter(_ a: [PayloadPathComponent], _ b: [PayloadPathComponent]) -> Bool {
        for (x, y) in zip(a, b) where x != y {
            if case .index(let i) = x, case .index(let j) = y { return i > j }
            return render([x]) > render([y])
        }
        return a.count > b.count
    }

    private static func set(_ path: ArraySlice<PayloadPathComponent>, to newValue: Any, in value: Any, making: Bool = false) -> Any {
        guard let first = path.first else { return newValue }
        switch first {
        case .key(let key):
            guard var dictionary = value as? [String: Any] else { return value }
            if making && path.count == 1 {
                dictionary[key] = newValue
                return dictionary
            }
            guard let child = dictionary[key] else { return value }
            dictionary[key] = set(path.dropFirst(), to: newValue, in: child, making: making)
            return dictionary
        case .index(let index):
            guard var array = value as? [Any], array.indices.contains(index) else { return value }
            array[index] = set(path.dropFirst(), to: newValue, in: array[index], making: making)
            return array
        }
    }

    /// Removes the value at `path`; an object or array that this leaves empty goes too (a
    /// container that was empty before is left alone).
    private static func remove(_ path: ArraySlice<PayloadPathComponent>, from value: Any) -> Any {
        guard let first = path.first else { return value }
        let rest = path.dropFirst()
        switch first {
        case .key(let key):
            guard var dictionary = value as? [String: Any], let child = dictionary[key] else { return value }
            dictionary[key] = rest.isEmpty ? nil : emptied(child, remove(rest, from: child))
            return dictionary
        case .index(let index):
            guard var array = value as? [Any], array.indices.contains(index) else { return value }
            if rest.isEmpty {
                array.remove(at: index)
            } else if let kept = emptied(array[index], remove(rest, from: array[index])) {
                array[index] = kept
            } else {
                array.remove(at: index)
            }
            return array
        }
    }

    /// `after`, or nil when the removal emptied a container that was not empty before.
    private static func emptied(_ before: Any, _ after: Any) -> Any? {
        func isEmpty(_ value: Any) -> Bool { (value as? [String: Any])?.isEmpty ?? (value as? [Any])?.isEmpty ?? false }
        return isEmpty(after) && !isEmpty(before) ? nil : after
    }
}
