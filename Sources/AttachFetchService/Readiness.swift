import AttachFetch

/// `/readyz`'s answer when ready: the status, and how the decoders are confined (what each
/// worker is checked for before its first job), so that a host running with less shows it.
struct Readiness: Encodable {
    var status: String
    var decoders: DecoderConfinement
}

extension AttachFetchServer {
    /// How the service's decoders are confined (`/readyz`, the metrics, and `serve`'s log).
    public var decoderConfinement: DecoderConfinement { pipeline.decoderConfinement }
}
