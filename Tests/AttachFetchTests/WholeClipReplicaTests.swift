import Foundation
import Testing
@testable import AttachFetch

extension DeadlineBoundSuites {
    /// A campaign's whole clip across replicas sharing a real object store (SeaweedFS): the
    /// replica that cut the clip short keeps its lease, renewed, while it makes the whole one;
    /// another replica's caller meanwhile gets the cut clip from the store, transcoding nothing;
    /// once stored, the whole clip is what every replica gives.
    @Suite(.serialized, .sharedSeaweedStore) struct WholeClipReplicaTests {
        @Test func theOtherReplicaGetsTheCutClipMeanwhileAndTheWholeClipAfter() async throws {
            let store = try SeaweedStore.current()
            let media = Scratch(), scratchA = Scratch(), scratchB = Scratch()
            let prefix = "whole-clip-\(UInt32.random(in: 0...UInt32.max))"
            try await offPool {
                // As long as the deadline tests' clip: no 2-core machine makes it whole by 4 s.
                try VideoTranscodeTests.make(media.path, "replicas.mkv", size: "1920x1080", seconds: TranscodeDeadlineTests.clipSeconds, audio: true,
                                             ["-r", "15", "-c:v", "mpeg4", "-q:v", "16", "-c:a", "libvorbis"])
            }
            let adjust: (inout AttachFetchConfiguration) -> Void = { configuration in
                configuration.objectStore = try? store.target(prefix: prefix)
                configuration.cache = ResultCaching()
            }
            try await withMediaServer(directory: media.path) { server in
                let url = "\(server.baseURL)/media/replicas.mkv"
                try await withPipeline(scratchA, adjust) { a in
                    try await withPipeline(scratchB, adjust) { b in
                        let firstAsked = Date().timeIntervalSince1970
                        let first = await fetchOne(url, a, deadline: .seconds(4))
                        #expect(first.status == .ready && first.transforms == [.transcoded, .trimmed],
                                "\(first.status) \(first.reason?.message ?? "") \(first.transforms ?? [])")

                        let meanwhile = await fetchOne(url, b, deadline: .seconds(3))
                        #expect(meanwhile.status == .ready && meanwhile.cache == .shared && meanwhile.duration == first.duration,
                                "\(meanwhile.cache?.rawValue ?? "") \(meanwhile.duration ?? 0) \(meanwhile.reason?.message ?? "")")
                        #expect(b.decodesStarted.probes == 0 && b.wholeClipDecodesStarted == 0, "the other replica transcoded")

                        // The first caller's lease ran to its deadline plus 1 s; while the whole clip is
                        // made it is renewed past that. Polled, since a fast machine makes the clip in
                        // a few seconds.
                        let firstExpiry = firstAsked + 4 + 1
                        var renewedTo: Double?, seen: [String] = []
                        let pollUntil = ContinuousClock.now + .seconds(60)
                        while renewedTo == nil, ContinuousClock.now < pollUntil {
                            seen = try store.keys("media", prefix: prefix)
                            if let lease = seen.first(where: { $0.contains("/leases/") }),
                               let body = try? store.object("media", lease).body,
                               let expires = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["expires"] as? Double,
                               expires > firstExpiry + 5 {
                                renewedTo = expires
                            } else if seen.filter({ $0.hasSuffix(".mp4") }).count >= 2 && !seen.contains(where: { $0.contains("/leases/") }) {
                                break  // the whole clip is stored and the lease given back
                            }
                            try await Task.sleep(for: .milliseconds(100))
                        }
                        #expect(renewedTo != nil, "no renewed lease seen while the whole clip was made: \(seen)")

                        let whole = await fetchOne(url, a, deadline: .seconds(90))
                        #expect(whole.transforms == [.transcoded] && abs((whole.duration ?? 0) - Double(TranscodeDeadlineTests.clipSeconds)) < 0.5,
                                "\(whole.transforms ?? []) \(whole.duration ?? 0) \(whole.reason?.message ?? "")")
                        #expect(try !store.keys("media", prefix: prefix).contains { $0.contains("/leases/") }, "the lease is given back once the whole clip is stored")
                        // The other replica asks the store again within `StoreResults.provisionalReuse`.
                        var fromB = await fetchOne(url, b, deadline: .seconds(5))
                        let waitUntil = ContinuousClock.now + StoreResults.provisionalReuse + .seconds(2)
                        while fromB.transforms != [.transcoded], ContinuousClock.now < waitUntil {
                            try await Task.sleep(for: .milliseconds(500))
                            fromB = await fetchOne(url, b, deadline: .seconds(5))
                        }
                        #expect(fromB.transforms == [.transcoded] && fromB.duration == whole.duration && fromB.publishedUrl == whole.publishedUrl,
                                "\(fromB.transforms ?? []) \(fromB.duration ?? 0)")
                        #expect(b.decodesStarted.probes == 0, "the other replica never transcoded")
                    }
                }
            }
        }
    }
}
