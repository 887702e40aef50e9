import AttachFetch
@testable import AttachFetchService
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Testing
import ServiceTestHelpers
import TestHelpers

extension ServiceTimerSuites {
    /// The service as a real child process: SIGTERM drains and exits 0, leaving nothing behind.
    // Serialized: the test times a SIGTERM drain of a batch in flight.
    @Suite(.serialized) struct ServiceProcessTests {
        @Test func sigtermLetsTheBatchInFlightFinishThenExitsZeroLeavingNothing() async throws {
            let scratch = Scratch()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            // A stall timeout past the origin's 4-s delay: the batch must be slow, not stalled.
            let (process, port) = try launchServe(["--allow-private-network", "--drain-delay", "2", "--stall-timeout", "8"],
                                                  environment: ["TMPDIR": scratch.path])
            let base = "http://127.0.0.1:\(port)"
            #expect(try await Exchange.send("GET", "\(base)/readyz").status == 200)
            let inFlight = Task { try await Exchange.post("\(base)/v1/attachments", json: #"{"urls": ["\#(origin.url("photo.jpg", "delay=4000"))"]}"#) }
            try await waitUntil("the batch to reach the origin") { origin.requests("photo.jpg") > 0 }
            kill(process.processIdentifier, SIGTERM)
            let signalled = ContinuousClock.now
            // Draining: /readyz says so at once, while the listener, for the 2-s drain delay, still
            // accepts new connections (a load balancer's check reaches it) ...
            var readiness = try await Exchange.send("GET", "\(base)/readyz")
            for _ in 0..<50 where readiness.status == 200 {
                try await Task.sleep(for: .milliseconds(20))
                readiness = try await Exchange.send("GET", "\(base)/readyz")
            }
            #expect(readiness.status == 503 && readiness.errorCode == "draining", "\(readiness.status) \(readiness.text)")
            #expect(try await Exchange.send("GET", "\(base)/healthz").status == 200, "alive while draining")
            #expect(ContinuousClock.now - signalled < .seconds(2), "checked within the drain delay")
            // ... then it stops accepting, with the batch still in flight.
            var refused = false
            while !refused, ContinuousClock.now - signalled < .seconds(10) {
                refused = (try? await Exchange.send("GET", "\(base)/healthz", timeout: 2)) == nil
                if !refused { try await Task.sleep(for: .milliseconds(100)) }
            }
            let refusedAfter = ContinuousClock.now - signalled
            #expect(refused && refusedAfter >= .milliseconds(1900), "new connections refused \(refusedAfter) after SIGTERM")
            #expect(origin.bodies("photo.jpg") == 0, "the batch is still in flight when the listener stops")
            let answer = try await inFlight.value
            #expect(answer.status == 200)
            #expect((answer.json["attachments"] as? [[String: Any]])?.first?["status"] as? String == "ready")
            try await offPool { process.waitUntilExit() }
            #expect(process.terminationStatus == 0)
            // Soon after the batch (about 4 s): no background task (the retention sweeper sleeps up
            // to a minute) or idle keep-alive connection holds the exit back.
            let exitedAfter = ContinuousClock.now - signalled
            #expect(exitedAfter < .seconds(15), "exited \(exitedAfter) after SIGTERM")
            #expect(scratch.tree() == [], "no working or batch files remain")
        }
    }
}
