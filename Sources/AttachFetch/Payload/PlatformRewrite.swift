import Foundation

extension PushPayload {
    /// The payload with every media URL replaced by the published URL of the file that the
    /// platforms reading its key can show: the Android variant where Android reads the key
    /// (a still JPEG or PNG within 1 MB, which iOS shows too, so a key both read gets it), the
    /// delivered file otherwise. Media that is not ready, not published, or that no platform
    /// reading the key can show (audio or video under a key only Android reads) is removed.
    /// `descriptors` are in `media`'s order; `pretty: false` writes it compact.
    ///
    /// Media published encrypted leaves its key: no device could show the ciphertext there.
    /// It is listed instead under `attach-fetch` beside `aps` in every APNs payload, with its
    /// key, plaintext SHA-256, type and thumbnail options, for the service extension
    /// (`AttachFetchDevice`) to decrypt (docs/payloads.md, "Encrypted media"). Plain media
    /// whose thumbnail options attach-fetch completed (the square it chose, a video's poster
    /// time) keeps its URL at its key, and is listed there too under `plain`, with those
    /// options as Apple's keys, where a vendor has no field of its own for them.
    public func rewritten(media: [PayloadMedia], descriptors: [AttachmentDescriptor], pretty: Bool = true) -> Data {
        var replacements: [(path: [PayloadPathComponent], value: String)] = []
        var removals: [[PayloadPathComponent]] = []
        var encrypted: [[String: Any]] = []
        var plain: [[String: Any]] = []
        var listed: Set<String> = []
        var vendorOptions: [(path: [PayloadPathComponent], value: Any)] = []
        for (item, descriptor) in zip(media, descriptors) {
            if descriptor.status == .ready, let entry = Self.encryptedEntry(descriptor) {
                removals.append(item.entry)
                // One URL under several keys without ids (Firebase's) is one attachment; every
                // entry with an id of its own (OneSignal's) stays one, even where its content is
                // another's (they then share the published object and key). Android cannot decrypt.
                let one = item.identifier == item.path ? "url " + item.url : "id " + item.identifier
                if item.platforms.contains(.ios), listed.insert(one).inserted {
                    var entry = entry
                    if item.role == .avatar { entry["role"] = "avatar" }
                    encrypted.append(entry)
                }
                continue
            }
            if let url = Self.publishedURL(for: item, descriptor) {
                replacements.append((item.location, url))
                if let options = airshipOptions(for: item, descriptor), !vendorOptions.contains(where: { $0.path == options.path }) {
                    vendorOptions.append(options)
                } else if item.provider != "airship", item.platforms.contains(.ios), url == descriptor.publishedUrl,
                          let entry = Self.plainEntry(descriptor, url: url), listed.insert("plain " + url).inserted {
                    plain.append(entry)
                }
            } else {
                removals.append(item.entry)
            }
        }
        guard !encrypted.isEmpty || !plain.isEmpty else { return replacing(replacements, removing: removals, adding: vendorOptions, pretty: pretty) }
        let roots = apnsRootsWithAps()
        var block: [String: Any] = ["v": 1, "attachments": encrypted]
        if !plain.isEmpty { block["plain"] = plain }
        return replacing(replacements, removing: removals,
                         adding: vendorOptions + (roots.isEmpty ? [[]] : roots).map { ($0 + [.key(Self.encryptedMediaKey)], block) }, pretty: pretty)
    }

    /// Airship's own thumbnail options for `item`'s attachment (`options.crop`, `options.time`)
    /// completed with what attach-fetch chose where the payload says nothing (`thumbnailOptions`):
    /// the whole `options` object and where it goes, or nil when nothing is added.
    func airshipOptions(for item: PayloadMedia, _ descriptor: AttachmentDescriptor) -> (path: [PayloadPathComponent], value: Any)? {
        let key = PayloadPathComponent.key("com.urbanairship.media_attachment")
        guard item.provider == "airship", let end = item.location.firstIndex(of: key) else { return nil }
        let path = Array(item.location[...end]) + [.key("options")]
        var options = value(at: path) as? [String: Any] ?? [:]
        let chosen = Self.thumbnailOptions(descriptor)
        var added = false
        if options["crop"] == nil, let rect = chosen.clippingRect {
            options["crop"] = ["x": rect.x, "y": rect.y, "width": rect.width, "height": rect.height]
            added = true
        }
        if options["time"] == nil, let time = chosen.thumbnailTime {
            options["time"] = time
            added = true
        }
        return added ? (path, options) : nil
    }

    /// The key of the encrypted media list, beside `aps`.
    public static let encryptedMediaKey = "attach-fetch"

    /// What the extension needs to fetch and decrypt one published attachment, or nil when it
    /// was not published encrypted.
    static func encryptedEntry(_ descriptor: AttachmentDescriptor) -> [String: Any]? {
        guard let encryption = descriptor.encryption, let url = descriptor.publishedUrl, let sha256 = descriptor.sha256,
              let fileExtension = descriptor.fileExtension else { return nil }
        var entry: [String: Any] = ["id": descriptor.identifier, "url": url, "key": encryption.key, "sha256": sha256,
                                    "ext": fileExtension]
        if let bytes = descriptor.bytes { entry["bytes"] = NSNumber(value: bytes) }
        if let uti = descriptor.uti { entry["type"] = uti }
        let options = thumbnailOptions(descriptor)
        if !options.isEmpty, let object = appleKeys(options) { entry["options"] = object }
        return entry
    }

    /// A plain attachment's entry under `plain`: its URL (as the payload's key now carries it)
    /// and the thumbnail options attach-fetch completed; nil when it completed none (the
    /// payload's own options are the extension's to read where they are).
    static func plainEntry(_ descriptor: AttachmentDescriptor, url: String) -> [String: Any]? {
        let options = thumbnailOptions(descriptor)
        guard options != (descriptor.options ?? AttachmentOptions()), let object = appleKeys(options) else { return nil }
        return ["id": descriptor.identifier, "url": url, "options": object]
    }

    /// Thumbnail options as the JSON object of Apple's keys the extension passes on.
    static func appleKeys(_ options: AttachmentOptions) -> Any? {
        (try? JSONEncoder().encode(options)).flatMap { try? JSONSerialization.jsonObject(with: $0) }
    }

    /// The payload's own thumbnail options, completed with what attach-fetch chose where the
    /// payload says nothing: the square `thumbnailClip` as the clipping rectangle, and a
    /// video's poster time as the thumbnail time.
    static func thumbnailOptions(_ descriptor: AttachmentDescriptor) -> AttachmentOptions {
        var options = descriptor.options ?? AttachmentOptions()
        if options.clippingRect == nil, let square = descriptor.thumbnailClip {
            options.clippingRect = .init(x: square.x, y: square.y, width: square.width, height: square.height)
        }
        if options.thumbnailTime == nil, descriptor.kind == .video, let time = descriptor.thumbnail?.time {
            options.thumbnailTime = time
        }
        return options
    }

    /// `payloadTooLarge` for each APNs payload of the rewritten `payload` over Apple's limit,
    /// saying by how much: the rewrite adds bytes (an encrypted attachment's entry is about 250).
    /// Give it the bytes that are sent: `rewritten(media:descriptors:pretty: false)`.
    public static func rewriteLint(_ payload: Data) -> [PayloadLintFinding] {
        guard let rewritten = try? PushPayload(data: payload) else { return [] }
        let roots = rewritten.apnsRootsWithAps()
        return (roots.isEmpty ? [[]] : roots).compactMap { base -> PayloadLintFinding? in
            // The whole document is measured as the bytes given (what is printed and sent); an
            // APNs payload inside another (FCM's `apns.payload`) as it is written: compact, sorted.
            let size = base.isEmpty ? payload.count
                : (try? JSONSerialization.data(withJSONObject: rewritten.value(at: base) ?? [:],
                                               options: [.sortedKeys, .withoutEscapingSlashes])).map(\.count) ?? 0
            guard size > apnsPayloadLimit else { return nil }
            return PayloadLintFinding(
                code: "payloadTooLarge", severity: .error,
                message: "the rewritten APNs payload is \(size) bytes, \(size - apnsPayloadLimit) over Apple's limit of \(apnsPayloadLimit): send fewer attachments or shorter fields",
                path: render(base))
        }
    }

    /// The URL the key should carry, or nil when the entry should go.
    static func publishedURL(for item: PayloadMedia, _ descriptor: AttachmentDescriptor) -> String? {
        guard descriptor.status == .ready, let main = descriptor.publishedUrl else { return nil }
        guard item.platforms.contains(.android), let variant = descriptor.variants?[Platform.android.rawValue] else { return main }
        if let url = variant.publishedUrl { return url }
        // Unsupported on Android: a key only Android reads has nothing to show; a shared key
        // keeps what iOS shows (lint says Android shows nothing).
        if variant.status == .unsupported && item.platforms == [.android] { return nil }
        return main
    }

    /// Findings about what Android will show (added to `lint(media:descriptors:)`):
    /// `androidImageTooLarge` for an image over 1 MB under a key Android reads (when the payload
    /// is not being rewritten to the variant), `unsupportedOnPlatform` for audio or video there.
    public func platformLint(media: [PayloadMedia], descriptors: [AttachmentDescriptor], rewriting: Bool) -> [PayloadLintFinding] {
        var findings: [PayloadLintFinding] = []
        for (item, descriptor) in zip(media, descriptors) where item.platforms.contains(.android) {
            switch descriptor.kind {
            case .image?:
                let bytes = descriptor.bytes ?? 0
                if !rewriting && bytes > Platform.androidImageLimit {
                    findings.append(PayloadLintFinding(
                        code: "androidImageTooLarge", severity: .warning,
                        message: "the image is \(bytes) bytes; Android shows notification images only up to \(Platform.androidImageLimit) bytes (use --rewrite with publishing to send a variant that fits)",
                        path: item.path))
                }
            case .video? where rewriting && descriptor.variants?[Platform.android.rawValue]?.publishedUrl != nil:
                break // the rewrite sends the poster there
            case .audio?, .video?:
                let poster = descriptor.kind == .video && descriptor.variants?[Platform.android.rawValue]?.status == nil
                    ? " (with --rewrite and publishing, the key gets the video's poster)" : ""
                findings.append(PayloadLintFinding(
                    code: "unsupportedOnPlatform", severity: .warning,
                    message: "\(descriptor.kind!.rawValue) under a key Android reads: Android shows only still images in notifications\(poster)",
                    path: item.path))
            case nil:
                break
            }
        }
        return findings
    }
}
