extension AttachmentDescriptor {
    /// A row of the descriptor's field table: fields documented together, when they are in the
    /// document, and what they mean (Markdown).
    package struct FieldContract: Sendable {
        package let fields: [String]
        package let present: String
        package let meaning: String
    }

    /// The descriptor's top-level fields, each exactly once: the one definition that
    /// docs/descriptor.md's and the DocC catalogue's field tables are written from
    /// (`swift run contract-lists`). A new field is added here, beside its `Codable` key;
    /// Core's tests hold this list to the keys `JSONEncoder` writes.
    package static let fieldContracts: [FieldContract] = [
        FieldContract(fields: ["identifier"], present: "always",
                      meaning: "the caller's, default `attachment-<index>`"),
        FieldContract(fields: ["url"], present: "always",
                      meaning: "exactly as given"),
        FieldContract(fields: ["finalUrl"], present: "once a request was made",
                      meaning: "after redirects"),
        FieldContract(fields: ["status"], present: "always",
                      meaning: "`ready`, `rejected`, `failed` or `timedOut`"),
        FieldContract(fields: ["reason"], present: "unless ready",
                      meaning: "`{code, message}`; absent when ready"),
        FieldContract(fields: ["file"], present: "when ready and files are kept",
                      meaning: #"absolute path; only when ready, and left out (as are the thumbnail's and the variants') for a call that kept no files (the service's `"files": "none"`, the library's `keepingFiles: false`)"#),
        FieldContract(fields: ["mimeType"], present: "once sniffed",
                      meaning: "decided from the bytes (canonical name; libmagic's when not in the table)"),
        FieldContract(fields: ["declaredMimeType"], present: "when the server sent one",
                      meaning: "the server's Content-Type, for diagnosis only"),
        FieldContract(fields: ["kind", "uti", "fileExtension"], present: "once typed",
                      meaning: "from the [media table](#media-table)"),
        FieldContract(fields: ["bytes", "sha256"], present: "when the body was read whole",
                      meaning: "of the saved (delivered) file; for a body refused though read whole (a PDF shorter than the 4-KiB sniff window), of that body"),
        FieldContract(fields: ["width", "height"], present: "when decoded",
                      meaning: "of the delivered image or video as displayed (EXIF orientation, rotation and sample aspect ratio applied)"),
        FieldContract(fields: ["thumbnail"], present: "when one was made",
                      meaning: "`{file, width, height}`, plus `time` (seconds) for a video's poster frame (the frame taken: the time asked for, or the one the automatic choice took), `publishedUrl` when published, and `publishedBytes` and `encryption` when published encrypted"),
        FieldContract(fields: ["timings"], present: "always",
                      meaning: "milliseconds: `total` (from the start of the batch), `connect`, `firstByte`, `download`, `thumbnail`, `normalize`, `probe`, `variants` where known, and `queued`: how long the transfer waited for a slot (`--max-concurrency`, or `--max-host-connections` for its host), for its share of `--max-inflight-bytes`, and for a Retry-After pause (a cache `hit` or `revalidated` result has only `total`). The [rule](#timings): `queued` + `download` ≤ `total`, and `connect` ≤ `firstByte` ≤ `download`"),
        FieldContract(fields: ["role", "payloadPath", "options"], present: "for payload media",
                      meaning: "added for push payloads (see [payloads](payloads.md#what-each-descriptor-gains)); absent otherwise"),
        FieldContract(fields: ["sourceAudioCodec"], present: "when the audio was re-encoded",
                      meaning: "added: the source's audio codec as people name it (`Opus`, `Vorbis`, `FLAC`); `audioCodec` is the delivered one (`aac`)"),
        FieldContract(fields: ["sourceVideoCodec"], present: "when the video was re-encoded",
                      meaning: "added: the source's video codec as people name it (`VP9`, `VP8`, `AV1`); `videoCodec` is the delivered one (`h264`)"),
        FieldContract(fields: ["sourceMimeType", "sourceBytes", "sourceWidth", "sourceHeight"], present: "once admitted",
                      meaning: "added: the original as downloaded (libmagic's type); equal to the delivered values when nothing was done"),
        FieldContract(fields: ["transforms"], present: "once admitted",
                      meaning: "added: what was done to the original, in order: `transcoded` (another format), `reencoded` (same format, to fit), `downscaled`, `remuxed` (streams copied into MPEG-4 without re-encoding: QuickTime or 3GPP, HEVC tagged `hev1` re-tagged `hvc1`, AAC from ADTS or Matroska), `trimmed` (audio or video cut short to fit the size limit or the deadline: the first `duration` seconds), `cropped` (only in an Android variant: cut to 2:1 around what matters, see [media](media.md#crops-and-the-thumbnail-square)), `partial` (audio or video re-encoded from what of a damaged source could be decoded; `sourceDamage` says what, see [media](media.md#damaged-sources)), `oriented` (pixels turned as the EXIF orientation says, no tag left: a JPEG whose EXIF blocks disagreed, turned losslessly where whole blocks allow and encoded again otherwise, or an Android variant turned losslessly, see [media](media.md#orientation)); `[]` when delivered as downloaded. Audio re-encoded to AAC (Ogg, FLAC, AC-3, WMA, ...) and video re-encoded to H.264 (WebM, Matroska with VP9 or AV1, Theora, WMV, Flash Video, ...) are `transcoded`"),
        FieldContract(fields: ["sourceDamage"], present: "with `partial`",
                      meaning: #"added: what the source's decoders reported, in their words, with how many packets or frames did not decode (`"3 FLAC audio packets did not decode (Invalid data found when processing input)"`)"#),
        FieldContract(fields: ["duration", "videoCodec", "audioCodec"], present: "when probed",
                      meaning: "added for audio and video, from FFmpeg's probe (seconds; codec names such as `h264`, `aac`); `duration` is the streams' length, an MPEG-4 file's from its samples when its header says otherwise"),
        FieldContract(fields: ["statedDuration"], present: "when a header disagrees with its samples",
                      meaning: "added: the seconds an MPEG-4 file's header claimed, when they differ from its samples' length (`duration`) by more than 0.5 s"),
        FieldContract(fields: ["cache"], present: "when a cache or shared work answered",
                      meaning: "added: `miss` (this request did the work), `hit` (a fresh cached result), `revalidated` (a stale one the origin confirmed with 304), `coalesced` (shared with a request for the same URL and options already under way), `shared` (added with object-store publishing: another replica's result, read from the store; see [past one machine](deployment.md#past-one-machine))"),
        FieldContract(fields: ["publishedUrl"], present: "when published",
                      meaning: "added with publishing: where devices fetch the delivered file (published encrypted: the ciphertext, `<sha256 of the ciphertext>.aes128gcm`)"),
        FieldContract(fields: ["publishedBytes"], present: "when published encrypted",
                      meaning: "added with [encrypted media](encryption.md): the published object's size, the ciphertext's; `bytes` and `sha256` stay the plaintext's, which the device checks after decrypting"),
        FieldContract(fields: ["encryption"], present: "when published encrypted",
                      meaning: #"added with [encrypted media](encryption.md): `{scheme: "aes128gcm", key, recordSize}`: the RFC 8188 content coding, the 16-byte input key as base64url without padding, and the record size the object was written with. The thumbnail and each variant carry their own"#),
        FieldContract(fields: ["variants"], present: "where a platform's file differs",
                      meaning: #"added with platforms: keyed by platform (`android`), only where its file differs: a made variant `{file, bytes, sha256, mimeType, width, height, transforms, publishedUrl}` (and `publishedBytes`, `encryption` when published encrypted), or `{status: "unsupported", reason: {code: "unsupportedOnPlatform", message}}`, or `{status: "failed", reason}` when it could not be made (deadline, would not fit)"#),
        FieldContract(fields: ["ats"], present: "once a request was made",
                      meaning: "added for http(s) media once a request was made: `{compliant, problems: [{code, message}]}`, whether iOS App Transport Security would load it without an exception (see [ATS problem codes](#ats-problem-codes))"),
        FieldContract(fields: ["skippedAtDeadline"], present: "when the deadline cut a step short",
                      meaning: "added: the steps the batch deadline cut short, named as in `timings`: `thumbnail` (an image delivered without one, and so without the full decode that catches a truncated or corrupt image), `probe` (audio or video delivered as sniffed: no duration, codecs or poster), `variants` (a platform's variant missing), `transcode` (sound or video re-encoded only up to the time the deadline left: the first seconds, `transforms` ending in `trimmed`); absent when nothing was cut short. Such a result is never cached: the next request for the URL does the work again, under its own deadline"),
        FieldContract(fields: ["thumbnailClip"], present: "images and videos with a thumbnail, unless the request gave a `clip` or `crop: none`",
                      meaning: "added: `{x, y, width, height}` in the unit square of the delivered image (or the video's poster frame): the square, in pixels, that iOS should show as the attachment's thumbnail (`UNNotificationAttachmentOptionsThumbnailClippingRectKey`), chosen by the request's `crop` (attention by default) or centred on its `focus`"),
    ]
}
