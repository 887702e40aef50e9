import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import AttachFetch

extension ObjectStoreBoundSuites {
    /// Real `attach-fetch serve` processes sharing one real object store (SeaweedFS), three of
    /// them behind a real load balancer (nginx, round robin), all on loopback; and the CLI's start
    /// check of the store. Credentials reach the processes through their environment only.
    // Serialized: each test runs three service processes and nginx, and times a lease held by a killed replica.
    @Suite(.serialized, .sharedSeaweedStore) struct ReplicaTests {

        /// One `attach-fetch serve` child process, killed at the end if still running.
        final class Replica: @unchecked Sendable {
            // @unchecked Sendable: `process` is started in init, then only signalled and waited for.
            let process: Process
            let port: Int
            var base: String { "http://127.0.0.1:\(port)" }

            init(store: SeaweedStore, prefix: String, scratch: Scratch) throws {
                (process, port) = try launchServe(["--allow-private-network", "--publish-to", "s3://media/\(prefix)",
                                                   "--public-base", "https://cdn.example.test/\(prefix)"],
                                                  environment: store.environment().merging(["TMPDIR": scratch.path]) { $1 })
            }

            func kill(_ signal: Int32 = SIGKILL) {
                guard process.isRunning else { return }
                Glibc.kill(process.processIdentifier, signal)
                process.waitUntilExit()
            }

            deinit { kill() }
        }

        /// nginx from Debian balancing round robin over `replicas`, on 127.0.0.1 only.
        final class Balancer {
            let port: Int
            let prefix = Scratch()
            private let process = Process()
            var base: String { "http://127.0.0.1:\(port)" }

            init(_ replicas: [Replica]) throws {
                port = try NginxTLSServer.freeLoopbackPort()
                let p = prefix.path
                let servers = replicas.map { "server 127.0.0.1:\($0.port);" }.joined(separator: " ")
                try """
                daemon off; master_process off; worker_processes 1;
                pid \(p)/nginx.pid; error_log \(p)/error.log warn;
                events { worker_connections 1024; }
                http {
                    access_log off;
                    client_body_temp_path \(p)/body; proxy_temp_path \(p)/proxy; fastcgi_temp_path \(p)/fastcgi;
                    uwsgi_temp_path \(p)/uwsgi; scgi_temp_path \(p)/scgi;
                    upstream replicas { \(servers) keepalive 16; }
                    server {
                        listen 127.0.0.1:\(port);
                        location / { proxy_pass http://replicas; proxy_http_version 1.1; proxy_set_header Connection "";
                                     proxy_read_timeout 60s; proxy_next_upstream off; }
                    }
                }
                """.write(toFile: "\(p)/nginx.conf", atomically: true, encoding: .utf8)
                process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
                process.arguments = ["-p", p, "-c", "\(p)/nginx.conf", "-e", "\(p)/error.log"]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                // Ready once a replica's /healthz answers through it.
                struct BalancerDidNotStart: Error, CustomStringConvertible { let description: String }
                let answered = pollUntil(timeout: .seconds(10)) {
                    !process.isRunning || (try? runChild("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(base)/healthz"]).output) == "200"
                }
                if answered && process.isRunning { return }
                throw BalancerDidNotStart(description: "nginx did not start: \((try? String(contentsOfFile: "\(p)/error.log", encoding: .utf8)) ?? "")")
            }

            deinit {
                if process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                    process.waitUntilExit()
                }
            }
        }

        /// What the tests read of one call's descriptor.
        struct Answer: Sendable, CustomStringConvertible {
            var status: String
            var cache: String?
            var publishedUrl: String?
            var message: String?
            var mimeType: String?
            var description: String { "\(status) \(cache ?? "-") \(message ?? "")" }
        }

        private func attachment(_ base: String, _ url: String, deadlineMs: Int = 15_000) async throws -> Answer {
            let answer = try await Exchange.post("\(base)/v1/attachments", json: #"{"urls": ["\#(url)"], "deadlineMs": \#(deadlineMs)}"#)
            guard let first = (answer.json["attachments"] as? [[String: Any]])?.first else { return Answer(status: "HTTP \(answer.status)") }
            return Answer(status: first["status"] as? String ?? "-", cache: first["cache"] as? String,
                          publishedUrl: first["publishedUrl"] as? String, message: (first["reason"] as? [String: Any])?["message"] as? String,
                          mimeType: first["mimeType"] as? String)
        }

        /// A photo, and a WebM the service transcodes: made once across the replicas, either way.
        @Test(arguments: ["photo.jpg", "clip.webm"])
        func sixtyCallsThroughThreeReplicasMakeOneOriginRequestAndALaterReplicaReadsTheResult(file: String) async throws {
            let store = try SeaweedStore.current()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let prefix = "replicas-\(UInt32.random(in: 0...UInt32.max))"
            let scratch = Scratch()
            let replicas = try (0..<3).map { _ in try Replica(store: store, prefix: prefix, scratch: scratch) }
            let balancer = try Balancer(replicas)
            let url = origin.url(file, "delay=800&cc=max-age%3D300")
            let balanced = balancer.base
            let answers = try await withThrowingTaskGroup(of: Answer.self) { group in
                for _ in 0..<60 { group.addTask { try await self.attachment(balanced, url) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.status == "ready" }, "\(answers.filter { $0.status != "ready" }.prefix(3))")
            #expect(origin.requests(file) == 1, "one origin request for 60 calls on 3 replicas (\(origin.requests(file)))")
            // The WebM is delivered as H.264 in MPEG-4 to every caller: the one transcode, shared.
            #expect(Set(answers.compactMap(\.mimeType)) == [file.hasSuffix(".webm") ? "video/mp4" : "image/jpeg"])
            let statuses = Set(answers.compactMap(\.cache))
            #expect(statuses.contains("shared"), "replicas that did not fetch read the stored result: \(statuses)")
            #expect(Set(answers.compactMap(\.publishedUrl)).count == 1)
            // Each replica counts what it asked the store; only the fetcher uploaded.
            var puts = 0, gets = 0
            for replica in replicas {
                let metrics = try await Exchange.send("GET", "\(replica.base)/metrics").text
                func count(_ method: String) -> Int {
                    metrics.split(separator: "\n").first { $0.hasPrefix("attach_fetch_object_store_requests{method=\"\(method)\"}") }
                        .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }.map { Int($0) } ?? 0
                }
                puts += count("PUT")
                gets += count("GET")
            }
            #expect(puts >= 3 && gets >= 2, "file, thumbnail and result uploaded; the others read the result: PUT \(puts), GET \(gets)")

            let fourth = try Replica(store: store, prefix: prefix, scratch: scratch)
            let late = try await attachment(fourth.base, url)
            #expect(late.status == "ready" && late.cache == "shared", "\(late)")
            #expect(origin.requests(file) == 1, "the fourth replica asked the store, not the origin")
            for replica in replicas + [fourth] { replica.kill(SIGTERM) }
            #expect(replicas.allSatisfy { $0.process.terminationStatus == 0 })
            _ = balancer
        }

        @Test func aReplicaKilledWhileHoldingTheLeaseDelaysTheOthersOnlyUntilItsExpiry() async throws {
            let store = try SeaweedStore.current()
            let origin = try CachingOrigin()
            defer { origin.shutdown() }
            let prefix = "killed-\(UInt32.random(in: 0...UInt32.max))"
            let scratch = Scratch()
            let replicas = try (0..<3).map { _ in try Replica(store: store, prefix: prefix, scratch: scratch) }
            let url = origin.url("rotated.jpg", "delay=2500&cc=max-age%3D300")
            // The holder: its call's deadline (4 s) is its lease's expiry.
            let holding = Task { try? await self.attachment(replicas[0].base, url, deadlineMs: 4000) }
            try await waitUntil("the holder's request to reach the origin") { origin.requests("rotated.jpg") > 0 }
            let killedAt = ContinuousClock.now
            replicas[0].kill()
            _ = await holding.value
            let waits = try await withThrowingTaskGroup(of: (Answer, Duration).self) { group in
                for index in 0..<10 {
                    group.addTask {
                        let started = ContinuousClock.now
                        let answer = try await self.attachment(replicas[1 + index % 2].base, url, deadlineMs: 12_000)
                        return (answer, ContinuousClock.now - started)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let sinceKill = ContinuousClock.now - killedAt
            #expect(waits.allSatisfy { $0.0.status == "ready" }, "\(waits.map(\.0).prefix(2))")
            #expect(waits.allSatisfy { $0.1 < .seconds(12) }, "every call answered by its deadline")
            // The lease expires 5 s after the holder started (its 4-s deadline and 1 s of margin),
            // then one fetch of 2.5 s; 3 s more for polling and a loaded machine.
            #expect(sinceKill < .milliseconds(10_500), "the dead holder cost at most its lease's expiry (\(sinceKill))")
            #expect(origin.requests("rotated.jpg") == 2, "the dead holder's fetch and one more, by one replica")
            for replica in replicas { replica.kill(SIGTERM) }
        }

        @Test func aStoreThatRefusesTheCredentialsOrHasNoSuchBucketStopsTheStartWithExitTwo() async throws {
            let store = try SeaweedStore.current()
            let wrongSecret = "wrong-\(UInt64.random(in: 1...UInt64.max))"
            let url = "http://127.0.0.1:9/photo.jpg"
            func run(_ arguments: [String], _ environment: [String: String]) async throws -> CLITests.Run {
                try await offPool {
                    let process = Process()
                    process.executableURL = CLITests.executable
                    process.arguments = arguments
                    process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AWS_") }.merging(environment) { $1 }
                    let out = Pipe(), err = Pipe()
                    process.standardOutput = out
                    process.standardError = err
                    try process.run()
                    let outData = out.fileHandleForReading.readDataToEndOfFile()
                    let errData = err.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    return CLITests.Run(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                                        stderr: String(decoding: errData, as: UTF8.self))
                }
            }
            let publish = ["--publish-to", "s3://media/start", "--public-base", "https://cdn.example.test/start"]
            let cases: [([String], [String: String], String)] = [
                (publish + ["--allow-private-network", url], store.environment(secret: wrongSecret), "SignatureDoesNotMatch"),
                (["serve", "--port", "0"] + publish, store.environment(secret: wrongSecret), "SignatureDoesNotMatch"),
                (["--publish-to", "s3://no-such-bucket/x", "--public-base", "https://cdn.example.test/x", url], store.environment(), "NoSuchBucket"),
                (publish + [url], ["AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials"], "no object store credentials"),
                (["--publish-to", "s3://media/x", url], store.environment(), "--publish-to needs --public-base"),
                (["--publish-to", "s3://media/x", "--publish-dir", "/tmp", "--public-base", "https://cdn.example.test/", url],
                 store.environment(), "not both"),
            ]
            for (arguments, environment, words) in cases {
                let result = try await run(arguments, environment)
                #expect(result.status == 2, "\(arguments): \(result.status) \(result.stderr)")
                #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
                #expect(!result.stderr.contains(wrongSecret) && !result.stderr.contains(SeaweedStore.secretKey)
                        && !result.stdout.contains(wrongSecret), "no secret in what it prints")
            }
            // A shared credentials file's profile works as the environment does.
            let scratch = Scratch()
            try "[other]\naws_access_key_id = \(SeaweedStore.accessKey)\naws_secret_access_key = \(SeaweedStore.secretKey)\n"
                .write(toFile: "\(scratch.path)/credentials", atomically: true, encoding: .utf8)
            let profile = try await run(publish + ["--allow-private-network", "--format", "json", url],
                                        ["AWS_SHARED_CREDENTIALS_FILE": "\(scratch.path)/credentials", "AWS_PROFILE": "other",
                                         "AWS_ENDPOINT_URL_S3": store.endpoint])
            #expect(profile.status == 1, "past the start check; the URL itself fails: \(profile.stderr)")
            #expect(profile.stdout.contains("connectFailed"), "\(profile.stdout)")
        }

        /// The store's answer to a readiness probe is reused for `storeCheckReuse` (5 s) of the
        /// pipeline's clock, which the test moves: within it the last answer stands, past it the
        /// store is asked again and its absence ends readiness.
        @Test func readinessIsUnavailableWhileTheStoreCannotBeReached() async throws {
            let store = try SeaweedStore()
            let time = ManualClock()
            let service = try await RunningServer.start(Scratch()) {
                $0.pipeline.objectStore = try? store.target(prefix: "ready")
                $0.pipeline.clock = time.clock
            }
            #expect(try await Exchange.send("GET", "\(service.base)/readyz").status == 200)
            store.stop()
            time.advance(by: .seconds(4.9))
            // Within the reuse window: no store request is sent for a probe (one would fail now).
            let soon = try await Exchange.send("GET", "\(service.base)/readyz")
            #expect(soon.status == 200, "\(soon.status) \(soon.text)")
            time.advance(by: .seconds(0.2))
            let answer = try await Exchange.send("GET", "\(service.base)/readyz")
            #expect(answer.status == 503 && answer.errorCode == "objectStoreUnavailable", "\(answer.status) \(answer.text)")
            #expect(!answer.text.contains(SeaweedStore.secretKey))
            await service.stop()
        }
    }
}
