import Foundation
import Testing
@testable import AttachFetch
@testable import AttachFetchTransfer

/// A host that answers is not dead (`OriginBreakers`): its timeouts count only when it has
/// answered nothing within `answerWindow`, and when its breaker opens, the requests already
/// waiting are tried unless it refuses connections or has not answered lately. Without sockets.
@Suite struct AnsweringHostStateTests {
    private let host = "https://cdn.example.com"
    private let wall = Date(timeIntervalSince1970: 43_200)

    @Test func stallsFromAHostThatAnswersDoNotOpenItsBreaker() {
        var breakers = OriginBreakers(failures: 3, cooldown: .seconds(30))
        let start = ContinuousClock.now
        #expect(breakers.record(host, failure: nil, now: start, wall: wall) == .none)
        // Many stalls within the window after an answer: none counts.
        for n in 0..<20 { #expect(breakers.record(host, failure: "timed out", now: start + .milliseconds(100 * n), wall: wall) == .none) }
        #expect(breakers.admit(host, now: start + .seconds(3)) == .go)
        // Past the window with no answer, stalls count again: the third opens it, and the
        // waiting requests end (nothing answered lately).
        let late = start + OriginBreakers.answerWindow + .seconds(1)
        #expect(breakers.record(host, failure: "timed out", now: late, wall: wall) == .none)
        #expect(breakers.record(host, failure: "timed out", now: late, wall: wall) == .none)
        guard case .opened = breakers.record(host, failure: "timed out", now: late, wall: wall) else {
            Issue.record("three stalls past the window did not open the breaker")
            return
        }
        #expect(breakers.endsWaiting(host))
    }

    @Test func aHostThatAnswersLatelyAndFailsKeepsItsWaitingRequestsUnlessItRefuses() {
        let start = ContinuousClock.now
        for (failure, ends) in [("answered HTTP 503", false), ("failed the TLS handshake", false), ("refused the connection", true)] {
            var breakers = OriginBreakers(failures: 2, cooldown: .seconds(30))
            _ = breakers.record(host, failure: nil, now: start, wall: wall)
            _ = breakers.record(host, failure: failure, now: start + .seconds(1), wall: wall)
            guard case .opened = breakers.record(host, failure: failure, now: start + .seconds(1), wall: wall) else {
                Issue.record("\(failure): two in a row did not open the breaker")
                continue
            }
            #expect(breakers.endsWaiting(host) == ends, "\(failure)")
            // New requests are refused either way.
            guard case .refuse = breakers.admit(host, now: start + .seconds(2)) else {
                Issue.record("\(failure): a new request went to an open host")
                continue
            }
        }
        // A host that never answered: its waiting requests end, as before.
        var dead = OriginBreakers(failures: 1, cooldown: .seconds(30))
        _ = dead.record(host, failure: "could not be connected to", now: start, wall: wall)
        #expect(dead.endsWaiting(host))
    }
}

extension DeadlineBoundSuites {
    /// The same over real sockets: a CDN with some cold objects.
    // Serialized: the stalls are timed against the stall timeout.
    @Suite(.serialized) struct AnsweringHostTests {
        /// One host, 16 connections: 10 requests that stall, then 120 images that answer in
        /// 0.3 s each, six at a time on the connections left. The stalls time out together at
        /// about 3 s, ten in a row, with half the images still waiting for a connection; every
        /// image is `ready`, none `originUnavailable` without being requested.
        @Test func aHostThatAnswersIsNotTakenForDead() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.breaker = .init(); $0.maxHostConnections = 16 }) { pipeline in
                try await withMediaServer { server in
                    let paths = (0..<10).map { "fault/silent?n=\($0)" } + (0..<120).map { "media/photo.jpg?delayMs=300&n=\($0)" }
                    let batch = await pipeline.process(paths.map { AttachmentRequest(url: "\(server.baseURL)/\($0)") }, deadline: .seconds(15))
                    let answering = zip(paths, batch.attachments).filter { !$0.0.hasPrefix("fault") }.map(\.1)
                    let codes = Dictionary(grouping: answering, by: { $0.reason?.code.rawValue ?? "ready" }).mapValues(\.count)
                    #expect(codes == ["ready": 120], "\(codes)")
                    let stalled = zip(paths, batch.attachments).filter { $0.0.hasPrefix("fault") }.map { $0.1.reason?.code }
                    #expect(stalled.allSatisfy { $0 == .timeout }, "\(stalled)")
                    #expect(pipeline.originBreakers.transitions["open"] == nil, "\(pipeline.originBreakers.transitions)")
                }
            }
        }
    }
}
