extension AttachFetchConfiguration {
    /// The largest body accepted per kind, in bytes (defaults: image 10 MiB, audio 5 MiB, video
    /// 50 MiB, image source 40 MiB). One type from the configuration down to the admission of
    /// each body.
    public typealias SizeLimits = MediaSizeLimits
}
