import ServiceLifecycle

/// The server as one service of an app's own `ServiceGroup` (swift-service-lifecycle): the
/// group's graceful shutdown drains and stops it as a signal would (`/readyz` 503, the drain
/// delay, the listener closed, batches in flight finished, files removed).
extension AttachFetchServer: Service {
    /// Serves until the service group shuts down gracefully or the task is cancelled.
    public func run() async throws {
        try await run(gracefulShutdownSignals: [])
    }
}

/// Turns `/readyz` to 503 as soon as graceful shutdown begins, then holds the shutdown for
/// `delay` (the listener still accepting) so that load balancers see it before connections
/// are refused.
struct DrainWatch: Service {
    let delay: Duration
    let onDrain: @Sendable () -> Void

    func run() async throws {
        try? await gracefulShutdown()
        onDrain()
        if delay > .zero { try? await Task.sleep(for: delay) }
    }
}
