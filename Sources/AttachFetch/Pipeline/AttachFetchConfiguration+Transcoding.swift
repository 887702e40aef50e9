extension AttachFetchConfiguration {
    /// The pipeline's own settings (`transcode`, `transcodeMaxLongEdge`; checked by `validate`).
    public var transcoding: TranscodeSettings {
        (try? TranscodeSettings(enabled: transcode, maxLongEdge: transcodeMaxLongEdge))
            ?? (try! TranscodeSettings(enabled: transcode)) // validate refuses a pipeline with a bad edge
    }

    /// What `request` runs under: its own settings, or the pipeline's.
    func transcoding(for request: AttachmentRequest) -> TranscodeSettings {
        request.transcoding ?? transcoding
    }

    /// Whether what is published for `request` is encrypted: its own choice, or
    /// `mediaEncryption.encryptsEverything` (false without `mediaEncryption`).
    func encrypts(_ request: AttachmentRequest) -> Bool {
        request.encrypt ?? mediaEncryption?.encryptsEverything ?? false
    }
}
