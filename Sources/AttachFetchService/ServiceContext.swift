import AttachFetch
import Hummingbird
import Logging
import NIOCore

/// The request context: Hummingbird's core, plus what a handler learned for the request's log
/// line (attachments by status).
struct ServiceContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let outcome = RequestOutcome()
    /// The request's connection: its `disconnectWatch` cancels a batch whose client left.
    let channel: any Channel

    init(source: Source) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// Filled by a handler, read by the logging middleware.
final class RequestOutcome: Sendable {
    private let counts = Locked<[String: Int]>([:])

    func count(_ status: String) { counts.withLock { $0[status, default: 0] += 1 } }
    var byStatus: [String: Int] { counts.withLock { $0 } }
}
