import AttachFetchCore

/// Blocking work that belongs to no pipeline (reading a file for an answer, sweeping old batch
/// directories, waiting for a thread to stop), run on a `WorkerPool` of its own: the project's
/// one way off Swift's cooperative pool, whose few threads must never block.
package enum BlockingWork {
    /// Enough for a few file reads beside a sweep; the work is short and rarely contended.
    private static let pool = BlockingPool(threads: 4, name: "af-blocking")

    /// Runs `body` on a pool thread and returns its result.
    package static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await pool.run { _ in body() }
    }

    /// Runs `body` on a pool thread and returns its result or its error.
    package static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.run { _ throws in try body() }
    }
}
