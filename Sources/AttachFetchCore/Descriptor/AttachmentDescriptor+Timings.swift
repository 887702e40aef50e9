extension AttachmentDescriptor {
    /// Milliseconds. `total` is measured from the start of the batch; the others are known
    /// only when that step ran.
    public struct Timings: Codable, Sendable, Equatable {
        /// From the start of the batch to this attachment's end.
        public var total: Int
        /// Establishing the connection.
        public var connect: Int?
        /// Until the first byte of the body.
        public var firstByte: Int?
        /// The download, from the transfer's start to its end, less any pause for the bytes
        /// budget (that pause is in `queued`, so the two never overlap).
        public var download: Int?
        /// Making the thumbnail (the full decode).
        public var thumbnail: Int?
        /// Converting an image to fit (normalizing), and probing audio or video.
        public var normalize: Int?
        /// Probing audio or video with FFmpeg, and its poster frame.
        public var probe: Int?
        /// Making the platform variants.
        public var variants: Int?
        /// Waiting for a transfer slot (`maxConcurrentTransfers`, or
        /// `maxHostConnections` for its host), and for its share of `maxInflightBytes`.
        public var queued: Int?

        /// Makes timings, for example a fake in a test.
        public init(total: Int, connect: Int? = nil, firstByte: Int? = nil, download: Int? = nil,
                    thumbnail: Int? = nil, normalize: Int? = nil, probe: Int? = nil, variants: Int? = nil) {
            self.variants = variants
            self.total = total
            self.connect = connect
            self.firstByte = firstByte
            self.download = download
            self.thumbnail = thumbnail
            self.normalize = normalize
            self.probe = probe
        }
    }
}
