import Foundation

extension PushPayload {
    /// The payload with every media URL replaced by the published URL of the file that the
    /// platforms reading its key can show: the Android variant where Android reads the key
    /// (a still JPEG or PNG within 1 MB, which iOS shows too, so a key both read gets it), the
    /// delivered file otherwise. Media that is not ready, not published, or that no platform
    /// reading the key can show (audio or video under a key only Android reads) is removed.
    /// `descriptors` are in `media`'s order; `pretty: false` writes it compact.
    public func rewritten(media: [PayloadMedia], descriptors: [AttachmentDescriptor], pretty: Bool = true) -> Data {
        var replacements: [(path: [PayloadPathComponent], value: String)] = []
        var removals: [[PayloadPathComponent]] = []
        for (item, descriptor) in zip(media, descriptors) {
            if let url = Self.publishedURL(for: item, descriptor) {
                replacements.append((item.location, url))
            } else {
                removals.append(item.entry)
            }
        }
        return replacing(replacements, removing: removals, pretty: pretty)
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
            case .audio?, .video?:
                findings.append(PayloadLintFinding(
                    code: "unsupportedOnPlatform", severity: .warning,
                    message: "\(descriptor.kind!.rawValue) under a key Android reads: Android shows only still images in notifications",
                    path: item.path))
            case nil:
                break
            }
        }
        return findings
    }
}
