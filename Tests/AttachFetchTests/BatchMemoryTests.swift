import Foundation
import LoopbackHTTPServer
import Testing

/// A batch's memory follows the work in flight, not the batch's length: 5,000 requests (20
/// times the window) through the library, in a process of its own (`batch-memory-check`) that
/// stops itself when its resident memory grows past a cap, with every descriptor checked in
/// request order.
@Suite(.serialized) struct BatchMemoryTests {
    static let count = 5_000
    /// The cap on the batch's growth. With every request started at once (`--window max`), the
    /// batch grew past it within 2.3 s here (debug build); with the window, by 30 MiB for
    /// `process`, which returns every descriptor, and 23 MiB streamed
    /// (docs/performance.md#memory-and-batch-length): a leak of 9 KiB a request would exceed it.
    static let capMiB = 72

    @Test(arguments: [false, true]) func aLongBatchCostsOnlyTheWorkInFlight(streaming: Bool) async throws {
        let routes = MediaRoutes(directory: testMediaDirectory)
        // No request log: 5,000 requests would grow the test process for nothing.
        let server = try LoopbackHTTPServer(keepsRequestLog: false) { request, connection in routes.handle(request, connection) }
        defer { server.shutdown() }
        let base = server.baseURL
        let (status, output) = try await offPool {
            try runChild(builtExecutable("batch-memory-check"),
                         [base, "\(Self.count)", "\(Self.capMiB)"] + (streaming ? ["--streaming"] : []))
        }
        try #require(status == 0, "batch-memory-check exited \(status) (3: over the cap of \(Self.capMiB) MiB)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        let outcomes = try #require(report["outcomes"] as? [String])
        let growth = report["growthBytes"] as? Int ?? -1
        print("batch of \(Self.count)\(streaming ? ", streamed" : ""): peak memory +\(growth >> 20) MiB in \(report["elapsedMs"] ?? "?") ms")
        #expect(outcomes.count == Self.count)
        // One descriptor per request, in request order, each the one its URL earns.
        let wrong = outcomes.enumerated().filter { index, outcome in
            let expected = index % 100 == 0
                ? "attachment-\(index) \(base)/media/photo.jpg?i=\(index) ready -"
                : "attachment-\(index) \(base)/status/404?i=\(index) failed httpStatus"
            return outcome != expected
        }
        #expect(wrong.isEmpty, "\(wrong.count) unexpected, first: \(wrong.prefix(3).map(\.element))")
    }
}
