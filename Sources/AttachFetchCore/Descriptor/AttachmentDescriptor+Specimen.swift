extension AttachmentDescriptor {
    /// A descriptor with every field of every part set, so that encoding it writes every key:
    /// openapi.json's descriptor schemas are written from it (`openapi-document`), and the tests
    /// hold the compact writer and the field tables to it. The values mean nothing.
    package static var specimen: AttachmentDescriptor {
        let encryption = Encryption(scheme: "aes128gcm", key: "k", recordSize: 4096)
        let reason = Reason(code: .ioError, message: "m")
        var d = AttachmentDescriptor(identifier: "a", url: "https://a.test/a.webp", status: .ready, reason: reason,
                                     timings: .init(total: 9, connect: 1, firstByte: 2, download: 3, thumbnail: 4, normalize: 5,
                                                    probe: 6, variants: 7))
        d.timings.queued = 8
        (d.finalUrl, d.file, d.mimeType, d.declaredMimeType) = ("https://a.test/b.webp", "/t/a.jpg", "image/jpeg", "image/webp")
        (d.kind, d.uti, d.fileExtension, d.bytes, d.sha256) = (.image, "public.jpeg", "jpg", 10, "00")
        (d.width, d.height) = (4, 3)
        var thumbnail = Thumbnail(file: "/t/a.thumb.jpg", width: 4, height: 3, time: 0.5, publishedUrl: "https://c.test/t")
        (thumbnail.publishedBytes, thumbnail.encryption) = (11, encryption)
        d.thumbnail = thumbnail
        (d.role, d.payloadPath) = (.attachment, "aps.media")
        d.options = AttachmentOptions(clippingRect: .init(x: 0, y: 0, width: 1, height: 1), thumbnailTime: 1, thumbnailHidden: false)
        (d.sourceMimeType, d.sourceBytes, d.sourceWidth, d.sourceHeight) = ("image/webp", 20, 8, 6)
        (d.transforms, d.duration, d.videoCodec, d.audioCodec) = ([.transcoded], 1.5, "h264", "aac")
        d.statedDuration = 10
        (d.sourceAudioCodec, d.sourceVideoCodec) = ("Opus", "VP9")
        d.ats = ATSVerdict(problems: [.init(code: ATSVerdict.insecureScheme, message: "m")])
        (d.cache, d.publishedUrl, d.publishedBytes, d.encryption) = (.miss, "https://c.test/a", 12, encryption)
        var variant = Variant(status: .failed, reason: reason)
        (variant.file, variant.bytes, variant.sha256, variant.mimeType) = ("/t/a.android.jpg", 9, "01", "image/jpeg")
        (variant.width, variant.height, variant.transforms, variant.publishedUrl) = (2, 1, [.downscaled], "https://c.test/v")
        (variant.publishedBytes, variant.encryption) = (13, encryption)
        d.variants = ["android": variant]
        d.skippedAtDeadline = ["probe"]
        d.thumbnailClip = .whole
        d.sourceDamage = "1 FLAC audio packet did not decode (Invalid data found when processing input)"
        return d
    }
}
