import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch
@testable import AttachFetchTransfer

/// The per-host circuit breaker's states, without sockets.
@Suite struct OriginBreakerStateTests {
    private let host = "https://cdn.example.com"
    private let wall = Date(timeIntervalSince1970: 43_200)  // 12:00:00 UTC

    @Test func opensAfterThatManyFailuresInARowAndRefusesWithTheHostAndWhatFailed() {
        var breakers = OriginBreakers(failures: 3, cooldown: .seconds(30))
        let now = ContinuousClock.now
        #expect(breakers.record(host, failure: "timed out", now: now - .seconds(20), wall: wall) == .none)
        // Anything that is not the origin's failure resets the count (an answer, 11 s before:
        // past `answerWindow`, so the timeouts after it count).
        #expect(breakers.record(host, failure: nil, now: now - .seconds(11), wall: wall) == .none)
        #expect(breakers.record(host, failure: "timed out", now: now, wall: wall) == .none)
        #expect(breakers.record(host, failure: "timed out", now: now, wall: wall) == .none)
        #expect(breakers.admit(host, now: now) == .go)
        guard case .opened(let reason) = breakers.record(host, failure: "timed out", now: now, wall: wall) else {
            Issue.record("the third failure in a row did not open the breaker")
            return
        }
        #expect(reason.code == .originUnavailable)
        #expect(reason.message == "3 requests to cdn.example.com timed out in a row; not contacted again until 12:00:30 UTC")
        #expect(breakers.admit(host, now: now + .seconds(29)) == .refuse(reason))
        #expect(breakers.admit("https://other.example.com", now: now) == .go, "another host is not affected")
        #expect(breakers.openHosts(now: now) == 1 && breakers.transitions == ["open": 1])
    }

    @Test func afterTheCooldownOneProbeClosesOrReopensIt() {
        var breakers = OriginBreakers(failures: 1, cooldown: .seconds(10))
        let start = ContinuousClock.now
        _ = breakers.record(host, failure: "answered HTTP 502", now: start, wall: wall)
        #expect(breakers.admit(host, now: start + .seconds(10)) == .probe)
        // While the probe runs, others go to the queue, which lets one run for the host.
        #expect(breakers.admit(host, now: start + .seconds(10)) == .go)
        guard case .opened(let again) = breakers.record(host, failure: "refused the connection", now: start + .seconds(11), wall: wall) else {
            Issue.record("a failed probe did not open the breaker again")
            return
        }
        #expect(again.message.contains("the probe of cdn.example.com after its cool-down refused the connection"))
        #expect(breakers.admit(host, now: start + .seconds(20)) == .refuse(again))
        #expect(breakers.admit(host, now: start + .seconds(21)) == .probe)
        #expect(breakers.record(host, failure: nil, now: start + .seconds(21), wall: wall) == .closed)
        #expect(breakers.admit(host, now: start + .seconds(21)) == .go && breakers.openHosts(now: start + .seconds(21)) == 0)
        #expect(breakers.transitions == ["open": 2, "half_open": 2, "closed": 1])
    }

    @Test func aCampaignOverManyFailingHostsKeepsTheMapBoundedAndTheOpenHostsFirst() {
        var breakers = OriginBreakers(failures: 2, cooldown: .seconds(60))
        #expect(breakers.maxHosts == 10_000)
        let start = ContinuousClock.now
        // One host open for the whole campaign, then 100,000 others failing once each (closed,
        // one failure counted), a microsecond apart.
        _ = breakers.record(host, failure: "timed out", now: start, wall: wall)
        guard case .opened(let reason) = breakers.record(host, failure: "timed out", now: start, wall: wall) else {
            Issue.record("not opened")
            return
        }
        var largest = 0
        for n in 0..<100_000 {
            _ = breakers.record("https://dead\(n).example.com", failure: "could not be connected to", now: start + .microseconds(n), wall: wall)
            largest = max(largest, breakers.hostsRemembered)
        }
        #expect(largest <= 10_000, "the map held \(largest) hosts")
        let end = start + .microseconds(100_000)
        #expect(breakers.admit(host, now: end) == .refuse(reason), "the open host was forgotten before closed ones")
        #expect(breakers.openHosts(now: end) == 1)
        // The most recent failure is still counted: a second one opens that host's breaker.
        #expect(breakers.record("https://dead99999.example.com", failure: "timed out", now: end, wall: wall) != .none)
    }

    @Test func openHostsPastTheBoundForgetThoseWhoseCooldownEndsSoonestAndCountOnlyTheOpen() {
        var breakers = OriginBreakers(failures: 1, cooldown: .seconds(30))
        let start = ContinuousClock.now
        // 100,000 hosts opening a millisecond apart: 100 s, so most cool-downs end on the way.
        for n in 0..<100_000 {
            _ = breakers.record("https://dead\(n).example.com", failure: "timed out", now: start + .milliseconds(n), wall: wall)
            #expect(breakers.hostsRemembered <= 10_000)
        }
        let end = start + .milliseconds(99_999)
        // The last ones opened are the ones kept; the earliest cool-downs were forgotten.
        guard case .refuse = breakers.admit("https://dead99999.example.com", now: end) else {
            Issue.record("the host opened last was forgotten")
            return
        }
        #expect(breakers.admit("https://dead0.example.com", now: end) == .go)
        let open = breakers.openHosts(now: end)
        #expect(open > 0 && open <= 10_000, "\(open)")
        // Once every cool-down has ended, none counts as open, though the map still holds them.
        #expect(breakers.openHosts(now: end + .seconds(30)) == 0)
        #expect(breakers.hostsRemembered > 0)
    }

    @Test func failuresOfDifferentKindsAreNamedAsSuch() {
        var breakers = OriginBreakers(failures: 2, cooldown: .seconds(5))
        let now = ContinuousClock.now
        _ = breakers.record(host, failure: "timed out", now: now, wall: wall)
        guard case .opened(let reason) = breakers.record(host, failure: "answered HTTP 503", now: now, wall: wall) else {
            Issue.record("not opened")
            return
        }
        #expect(reason.message.hasPrefix("2 requests to cdn.example.com failed in a row (the last answered HTTP 503)"))
    }

    @Test func originFailuresAreConnectTimeoutTLSAnd5xxOnly() {
        #expect(OriginFailure.describe(.init(code: .connectFailed, message: "Failed to connect"), status: 0, osError: Int(ECONNREFUSED)) == "refused the connection")
        #expect(OriginFailure.describe(.init(code: .connectFailed, message: "Failed to connect"), status: 0, osError: Int(EHOSTUNREACH)) == "could not be connected to")
        #expect(OriginFailure.describe(.init(code: .timeout, message: "x"), status: 0) == "timed out")
        #expect(OriginFailure.describe(.init(code: .tlsFailed, message: "x"), status: 0) == "failed the TLS handshake")
        #expect(OriginFailure.describe(.init(code: .httpStatus, message: "x"), status: 503) == "answered HTTP 503")
        #expect(OriginFailure.describe(.init(code: .httpStatus, message: "x"), status: 404) == nil)
        #expect(OriginFailure.describe(.init(code: .deadlineExceeded, message: "x"), status: 0) == nil)
        #expect(OriginFailure.describe(.init(code: .corruptMedia, message: "x"), status: 200) == nil)
        #expect(OriginFailure.describe(nil, status: 200) == nil)
        #expect(!ResultCaching.cachedFailures.contains(.originUnavailable))
    }

    @Test func retryAfterIsSecondsOrAnHTTPDate() {
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryAfter.delay("120", now: now) == .seconds(120))
        #expect(RetryAfter.delay(" 1 ", now: now) == .seconds(1))
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:49:47 GMT", now: now) == .seconds(10))
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:49:27 GMT", now: now) == .zero, "a date past is no delay")
        #expect(RetryAfter.delay("99999999999999999999", now: now) == .seconds(86_400))
        #expect(RetryAfter.delay("soon", now: now) == nil && RetryAfter.delay("-5", now: now) == nil && RetryAfter.delay("", now: now) == nil)
    }
}

extension DeadlineBoundSuites {
    /// The breaker and Retry-After over real sockets.
    // Serialized: healthy attachments beside a dead host are timed against the stall timeout.
    @Suite(.serialized) struct OriginBreakerTests {
        @Test func aDeadHostCostsOneStallTimeoutAndNoHealthyAttachmentIsLate() async throws {
            let scratch = Scratch()
            // The CLI's defaults (stall 3 s, 512 per host, 5 failures) with the issue's deadline.
            try await withPipeline(scratch, { $0.breaker = .init() }) { pipeline in
                try await withMediaServer { dead in
                    try await withMediaServer { healthy in
                        let requests = (0..<200).map { AttachmentRequest(url: "\(dead.baseURL)/fault/silent?n=\($0)") }
                            + (0..<20).map { AttachmentRequest(url: "\(healthy.baseURL)/media/photo.jpg?n=\($0)") }
                        let started = ContinuousClock.now
                        let batch = await pipeline.process(requests, deadline: .seconds(12))
                        let elapsed = ContinuousClock.now - started
                        let healthyOnes = batch.attachments[200...]
                        #expect(healthyOnes.allSatisfy { $0.status == .ready })
                        // Their transfers neither waited for a slot the dead host held nor ran slow
                        // beside its stalls (their decodes then queue behind each other, which a busy
                        // machine makes longer; that is not the other host's doing).
                        let transfers = healthyOnes.map { ($0.timings.queued ?? 0) + ($0.timings.download ?? 0) }
                        #expect(transfers.allSatisfy { $0 <= 1_000 }, "queued + download: \(transfers) ms")
                        #expect(healthyOnes.allSatisfy { $0.timings.total < 3_000 }, "before the dead host's stall timeout: \(healthyOnes.map(\.timings.total))")
                        let stall = AttachFetchConfiguration().timeout.stall
                        #expect(elapsed <= stall + .seconds(2), "the batch took \(elapsed)")
                        #expect(dead.acceptedConnections <= AttachFetchConfiguration().maxHostConnections)
                        let codes = Dictionary(grouping: batch.attachments[..<200], by: { $0.reason?.code.rawValue ?? "ready" }).mapValues(\.count)
                        #expect(Set(codes.keys).isSubset(of: ["timeout", "originUnavailable"]) && codes["timeout"] != nil, "\(codes)")
                        #expect(pipeline.originBreakers.transitions["open"] == 1 && pipeline.originBreakers.openHosts == 1)
                        // The next batch for that host costs nothing: refused at once, nothing sent.
                        let accepted = dead.acceptedConnections
                        let again = ContinuousClock.now
                        let next = await pipeline.process((0..<10).map { AttachmentRequest(url: "\(dead.baseURL)/fault/silent?next=\($0)") })
                        #expect(ContinuousClock.now - again < .seconds(1))
                        #expect(next.attachments.allSatisfy { $0.reason?.code == .originUnavailable })
                        #expect(next.attachments[0].reason?.message.contains("timed out in a row; not contacted again until") == true,
                                "\(next.attachments[0].reason?.message ?? "")")
                        #expect(dead.acceptedConnections == accepted)
                    }
                }
            }
        }

        @Test func aHostThatRefusesConnectionsOpensItsBreaker() async throws {
            let scratch = Scratch()
            // A port that was just listened on and closed again refuses connections.
            let port = try await withMediaServer { $0.port }
            try await withPipeline(scratch, { $0.breaker.failures = 2; $0.maxHostConnections = 1 }) { pipeline in
                let batch = await pipeline.process((0..<5).map { AttachmentRequest(url: "http://127.0.0.1:\(port)/media/photo.jpg?n=\($0)") })
                // One at a time (a cap of one), in whatever order the queue got them: two refusals,
                // then the breaker.
                let codes = batch.attachments.map { $0.reason?.code }
                #expect(codes.filter { $0 == .connectFailed }.count == 2 && codes.filter { $0 == .originUnavailable }.count == 3, "\(codes)")
                let refused = batch.attachments.first { $0.reason?.code == .originUnavailable }
                #expect(refused?.reason?.message.hasPrefix("2 requests to 127.0.0.1:\(port) refused the connection in a row") == true,
                        "\(refused?.reason?.message ?? "")")
                #expect(pipeline.originBreakers.openHosts == 1)
            }
        }

        @Test func afterTheCooldownAProbeThatSucceedsClosesTheBreaker() async throws {
            let scratch = Scratch()
            let clock = ManualClock()
            try await withPipeline(scratch, { $0.maxHostConnections = 1; $0.clock = clock.clock; $0.breaker = .init() }) { pipeline in
                try await withMediaServer { server in
                    // Five distinct URLs (one URL would be fetched once), each answered 500 once.
                    let failing = await pipeline.process((0..<5).map { AttachmentRequest(url: "\(server.baseURL)/flaky/500/1/media/photo.jpg?n=\($0)") })
                    #expect(failing.attachments.allSatisfy { $0.reason?.code == .httpStatus })
                    // From now on every URL of the host would answer 200: only the breaker refuses.
                    let url = "\(server.baseURL)/flaky/500/0/media/photo.jpg"
                    let refused = await pipeline.process([AttachmentRequest(url: url)])
                    #expect(refused.attachments[0].reason?.code == .originUnavailable)
                    #expect(refused.attachments[0].reason?.message.contains("answered HTTP 500 in a row") == true)
                    #expect(server.counter("flaky /flaky/500/0/media/photo.jpg") == 0, "the open breaker sent nothing")
                    // Not yet: one second short of the cool-down.
                    clock.advance(by: AttachFetchConfiguration().breaker.cooldown - .seconds(1))
                    #expect(await pipeline.process([AttachmentRequest(url: url)]).attachments[0].reason?.code == .originUnavailable)
                    clock.advance(by: .seconds(1))
                    let probed = await pipeline.process([AttachmentRequest(url: url), AttachmentRequest(url: url + "?again")])
                    #expect(probed.attachments.allSatisfy { $0.status == .ready })
                    #expect(pipeline.originBreakers.transitions == ["open": 1, "half_open": 1, "closed": 1])
                    #expect(pipeline.originBreakers.openHosts == 0)
                }
            }
        }

        @Test func originUnavailableIsNeverCachedAndTheProbeKeepsTheAddressPolicy() async throws {
            let scratch = Scratch()
            let clock = ManualClock()
            try await withPipeline(scratch, {
                // Failures kept an hour: past the 31 s the test moves the clock, a kept refusal
                // would still be fresh.
                $0.cache = ResultCaching(failureFreshness: .seconds(3600))
                $0.breaker.failures = 1
                $0.clock = clock.clock
                $0.deniedRanges = [try! CIDRRange("127.0.0.2/32")]
            }) { pipeline in
                try await withMediaServer { server in
                    _ = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/status/503")])
                    let url = "\(server.baseURL)/media/photo.jpg"
                    #expect(await pipeline.process([AttachmentRequest(url: url)]).attachments[0].reason?.code == .originUnavailable)
                    clock.advance(by: .seconds(31))
                    // The probe is a request like any: redirected to a denied address, it is refused
                    // there (and says nothing against the origin, so the breaker closes).
                    let denied = "\(server.baseURL)/redirect-to?url=http://127.0.0.2:\(server.port)/media/photo.jpg"
                    #expect(await pipeline.process([AttachmentRequest(url: denied)]).attachments[0].reason?.code == .forbiddenAddress)
                    // The earlier refusal was not kept: the same URL now reaches the origin (a kept
                    // verdict would still be fresh).
                    let again = await pipeline.process([AttachmentRequest(url: url)])
                    #expect(again.attachments[0].status == .ready && again.attachments[0].cache == .miss)
                }
            }
        }

        @Test func retryAfterOneSecondIsWaitedAndRetriedOnce() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    let started = ContinuousClock.now
                    let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/flaky/503/1/media/photo.jpg?retryAfter=1")])
                    let elapsed = ContinuousClock.now - started
                    #expect(batch.attachments[0].status == .ready, "\(batch.attachments[0].reason?.message ?? "")")
                    #expect(server.counter("flaky /flaky/503/1/media/photo.jpg?retryAfter=1") == 2, "one retry")
                    #expect(elapsed >= .seconds(1), "the retry came \(elapsed) after the start, before the second asked for")
                    // Retried once only: a server that keeps asking gets its answer.
                    let stubborn = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/flaky/429/9/media/photo.jpg?retryAfter=0")])
                    #expect(stubborn.attachments[0].reason?.code == .httpStatus)
                    #expect(stubborn.attachments[0].reason?.message.contains("retried once already") == true)
                    #expect(server.counter("flaky /flaky/429/9/media/photo.jpg?retryAfter=0") == 2)
                }
            }
        }

        @Test func aRetryAfterDateIsReadAgainstThePipelinesClock() async throws {
            let scratch = Scratch()
            let clock = ManualClock()
            // The pipeline's clock is an hour ahead of the system's.
            clock.advance(by: .seconds(3600))
            try await withPipeline(scratch, { $0.clock = clock.clock }) { pipeline in
                try await withMediaServer { server in
                    // Half an hour ahead by the system's clock, half an hour past by the pipeline's:
                    // no wait, so retried at once (by the system's time, 1,800 s past the deadline).
                    let formatter = DateFormatter()
                    formatter.locale = Locale(identifier: "en_US_POSIX")
                    formatter.timeZone = TimeZone(identifier: "UTC")
                    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
                    let date = formatter.string(from: Date().addingTimeInterval(1800))
                    let query = date.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                    let path = "/flaky/503/1/media/photo.jpg?retryAfter=\(query)"
                    let batch = await pipeline.process([AttachmentRequest(url: server.baseURL + path)], deadline: .seconds(10))
                    #expect(batch.attachments[0].status == .ready, "\(batch.attachments[0].reason?.message ?? "")")
                    #expect(server.counter("flaky \(path)") == 2, "one retry")
                }
            }
        }

        @Test func aRetryAfterPastTheDeadlineEndsAtOnceAndSaysSo() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer { server in
                    let url = "\(server.baseURL)/flaky/503/1/media/photo.jpg?retryAfter=120"
                    let started = ContinuousClock.now
                    let batch = await pipeline.process([AttachmentRequest(url: url)], deadline: .seconds(10))
                    #expect(ContinuousClock.now - started < .seconds(2))
                    #expect(batch.attachments[0].reason?.code == .httpStatus)
                    #expect(batch.attachments[0].reason?.message
                        == "the server answered HTTP 503 and asked to retry after 120 s, which the deadline does not leave time for")
                    #expect(server.counter("flaky /flaky/503/1/media/photo.jpg?retryAfter=120") == 1)
                }
            }
        }

        @Test func retriesAreHeldToTheAddressPolicyToo() async throws {
            let scratch = Scratch()
            try await withPipeline(scratch, { $0.deniedRanges = [try! CIDRRange("127.0.0.2/32")] }) { pipeline in
                try await withMediaServer { server in
                    // The retry is redirected to a denied address: refused like any request.
                    let target = "http://127.0.0.2:\(server.port)/media/photo.jpg"
                    let url = "\(server.baseURL)/flaky/503/1/redirect-to?retryAfter=0&url=\(target)"
                    let batch = await pipeline.process([AttachmentRequest(url: url)])
                    #expect(batch.attachments[0].reason?.code == .forbiddenAddress, "\(batch.attachments[0].reason?.message ?? "")")
                    #expect(server.counter("flaky /flaky/503/1/redirect-to?retryAfter=0&url=\(target)") == 2)
                }
            }
        }
    }
}

extension DeadlineBoundSuites {
    /// The breaker in the service: one customer's dead CDN beside everyone else's healthy media.
    // Serialized: healthy attachments beside a dead host are timed against the stall timeout.
    @Suite(.serialized) struct OriginBreakerServiceTests {
        @Test func aDeadHostDoesNotSlowTheHealthyStream() async throws {
            let scratch = Scratch()
            let service = try await RunningServer.start(scratch)
            try await withMediaServer { dead in
                try await withMediaServer { healthy in
                    // Thirty calls at once for the dead host (it accepts and never answers).
                    let deadCalls = Task {
                        try await withThrowingTaskGroup(of: String.self) { group in
                            for n in 0..<30 {
                                group.addTask {
                                    let answer = try await Exchange.post("\(service.base)/v1/attachments",
                                                                         json: #"{"urls": ["\#(dead.baseURL)/fault/silent?n=\#(n)"], "deadlineMs": 8000}"#)
                                    return ((answer.json["attachments"] as? [[String: Any]])?.first?["reason"] as? [String: Any])?["code"] as? String ?? "none"
                                }
                            }
                            return try await group.reduce(into: [String]()) { $0.append($1) }
                        }
                    }
                    // Beside them a steady stream: four clients, a distinct image every 40 ms each.
                    let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
                        for client in 0..<4 {
                            group.addTask {
                                var mine: [Duration] = []
                                for k in 0..<25 {
                                    let started = ContinuousClock.now
                                    let answer = try await Exchange.post("\(service.base)/v1/attachments",
                                                                         json: #"{"urls": ["\#(healthy.baseURL)/media/photo.jpg?c=\#(client)&k=\#(k)"]}"#)
                                    mine.append(ContinuousClock.now - started)
                                    #expect(answer.status == 200 && answer.text.contains(#""status":"ready""#), "\(answer.text)")
                                    // The subject's pace: one call every 40 ms per client.
                                    try await Task.sleep(for: .milliseconds(40))
                                }
                                return mine
                            }
                        }
                        return try await group.reduce(into: [Duration]()) { $0 += $1 }
                    }.sorted()
                    let p99 = latencies[Int(Double(latencies.count) * 0.99) - 1]
                    // The real clock is the point: what a healthy origin's callers wait while a
                    // dead one holds connections. One second is generous (tens of milliseconds
                    // measured); a healthy call stuck behind the dead host's 8 s would be far over.
                    #expect(p99 < .seconds(1), "healthy p99 \(p99) beside a dead host")
                    let codes = try await deadCalls.value
                    #expect(Set(codes).isSubset(of: ["timeout", "originUnavailable"]) && codes.contains("timeout"), "\(codes)")
                    let metrics = try await Exchange.send("GET", "\(service.base)/metrics").text
                    #expect(metricValue(metrics, #"attach_fetch_origin_breaker_transitions_total{to="open"}"#) == 1, "\(metrics)")
                    #expect(metricValue(metrics, "attach_fetch_origin_breakers_open") == 1)
                    #expect((metricValue(metrics, #"attach_fetch_origin_connections{connection="new"}"#) ?? 0) >= 1)
                }
            }
            await service.stop()
        }
    }
}
