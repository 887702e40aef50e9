import AttachFetchCore
import CCurl
import Foundation
import LoopbackHTTPServer
import TestHelpers
import Testing
@testable import AttachFetchTransfer

/// The one libcurl engine loop that the downloads (`TransferEngine`) and the object-store
/// requests (`StoreEngine`) share, driven by a workload of the test's own: real easy handles
/// against a real server on 127.0.0.1.
@Suite struct CurlEngineTests {
    /// Starts `urls` as `HEAD` requests on its first turn, then sleeps as long as the test says;
    /// stops once told to and nothing is running.
    final class Workload: CurlEngineWorkload, @unchecked Sendable {
        // @unchecked Sendable: `running` is touched only on the engine's thread (every
        // workload method runs there); the rest is behind `state`.
        struct State {
            var turns = 0
            var results: [String: CURLcode] = [:]
            var stop = false
            var sleep: Duration = .seconds(30)
        }
        let state = Locked(State())
        private var pending: [String]
        private var running: [UnsafeMutableRawPointer: String] = [:]

        init(urls: [String]) { pending = urls }

        func turn(_ multi: CurlMulti) -> Duration? {
            let (stop, sleep) = state.withLock { state in
                state.turns += 1
                return (state.stop, state.sleep)
            }
            for url in pending {
                let easy = curl_easy_init()!
                _ = CurlOption.set(easy, CURLOPT_URL, url)
                _ = CurlOption.set(easy, CURLOPT_NOBODY, 1)
                _ = CurlOption.set(easy, CURLOPT_NOSIGNAL, 1)
                #expect(multi.add(easy) == nil)
                running[easy] = url
            }
            pending = []
            return stop && running.isEmpty ? nil : sleep
        }

        func completed(_ easy: UnsafeMutableRawPointer, result: CURLcode, in multi: CurlMulti) {
            guard let url = running.removeValue(forKey: easy) else { return }
            _ = multi.remove(easy)
            curl_easy_cleanup(easy)
            state.withLock { $0.results[url] = result }
        }

        func multiFailed(_ failure: Reason, in multi: CurlMulti) {
            Issue.record("the multi handle failed: \(failure.message)")
        }
    }

    @Test func runsTransfersToTheEndSleepsUntilWokenAndStopsWhenTheWorkloadIsDone() async throws {
        try await withMediaServer { server in
            let urls = (0..<3).map { "\(server.baseURL)/media/photo.jpg?n=\($0)" }
            let workload = Workload(urls: urls)
            let engine = try CurlEngine(threadName: "af-test-curl", maxIdleConnections: 4)
            engine.start(workload)
            // The completions wake the loop: every transfer ends, each with CURLE_OK.
            try await waitUntil("the three transfers to end") { workload.state.withLock { $0.results.count } == 3 }
            #expect(workload.state.withLock { $0.results } == Dictionary(uniqueKeysWithValues: urls.map { ($0, CURLE_OK) }))
            // Idle, it sleeps the 30 s its workload asked for; `wakeup()` ends the sleep at once.
            let turns = workload.state.withLock { $0.turns }
            engine.wakeup()
            try await waitUntil("a turn after the wakeup") { workload.state.withLock { $0.turns } > turns }
            // A workload with nothing left that says stop ends the loop.
            workload.state.withLock { $0.stop = true }
            engine.wakeup()
            try await offPool { engine.waitUntilStopped() }
            #expect(server.acceptedConnections >= 1)
        }
    }
}
