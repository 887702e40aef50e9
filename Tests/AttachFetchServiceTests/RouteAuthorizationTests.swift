import AttachFetch
@testable import AttachFetchService
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import ServiceTestHelpers
import TestHelpers

/// Deny by default, decided on the route the router resolved: against a token-protected service,
/// over raw sockets (so no client library tidies the path first), no spelling of a `/v1` route
/// gets a 2xx without the token, and nothing it names is fetched.
@Suite struct RouteAuthorizationTests {
    /// `rawStatus` for each request, on a thread of its own: blocking socket calls must not hold
    /// the cooperative pool the service's handlers need.
    static func rawStatuses(port: Int, _ requests: [(method: String, target: String, headers: [String], body: String)]) async throws -> [Int] {
        try await offPool { requests.map { rawStatus(port: port, method: $0.method, target: $0.target, headers: $0.headers, body: $0.body) } }
    }

    /// One request on a new connection, written byte for byte; the status code, or 0 when the
    /// service closed without answering. Blocking.
    static func rawStatus(port: Int, method: String, target: String, headers: [String] = [], body: String = "") -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard LoopbackSockets.connect(fd, port: port) else { return -1 }
        let head = (["\(method) \(target) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Connection: close",
                     "Content-Type: application/json", "Content-Length: \(body.utf8.count)"] + headers).joined(separator: "\r\n")
        let request = Array((head + "\r\n\r\n" + body).utf8)
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return -1 }
            sent += count
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !answer.contains(UInt8(ascii: "\n")) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            answer += buffer[..<count]
        }
        let line = String(decoding: answer.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self).split(separator: " ")
        return line.count >= 2 ? Int(line[1]) ?? 0 : 0
    }

    /// The ways a path can be spelt that a router or a naive prefix check might read apart:
    /// each applied to one `/v1` route.
    static let spellings: [(String, @Sendable (String) -> String)] = [
        ("as is", { $0 }),
        ("//", { "/" + $0 }),
        ("///", { "//" + $0 }),
        ("/./", { "/." + $0 }),
        ("/x/../", { "/x/.." + $0 }),
        ("%2F slashes", { $0.replacingOccurrences(of: "/", with: "%2F") }),
        ("%2f after the first", { "/" + $0.dropFirst().replacingOccurrences(of: "/", with: "%2f") }),
        ("percent-encoded letters", { $0.replacingOccurrences(of: "v1", with: "%761").replacingOccurrences(of: "a", with: "%61") }),
        (";parameter", { $0 + ";x=1" }),
        (";parameter inside", { $0.replacingOccurrences(of: "/v1", with: "/v1;x") }),
        ("upper case", { $0.uppercased() }),
        ("mixed case", { $0.replacingOccurrences(of: "v1", with: "V1") }),
        ("trailing slash", { $0 + "/" }),
        ("doubled inner slashes", { $0.replacingOccurrences(of: "/", with: "//") }),
        ("// and trailing", { "/" + $0 + "//" }),
        ("query", { $0 + "?rewrite=true" }),
        ("backslash", { $0.replacingOccurrences(of: "/", with: "\\") }),
        ("absolute form", { "http://127.0.0.1" + $0 }),
        ("absolute form //", { "http://127.0.0.1/" + $0 }),
        ("fragment", { $0 + "#x" }),
    ]

    /// `count` spellings made by stacking two to four of the above, and random percent-encoding
    /// of single bytes, on the `/v1` routes.
    static func fuzzedSpellings(_ routes: [String], count: Int, seed: UInt64) -> [String] {
        // Seeded, so a failing spelling can be replayed.
        var random = SeededRandom(state: seed)
        var made = Set<String>()
        while made.count < count {
            var path = routes.randomElement(using: &random)!
            for _ in 0..<Int.random(in: 2...4, using: &random) {
                if Bool.random(using: &random) {
                    path = spellings.randomElement(using: &random)!.1(path)
                } else if let index = path.indices.randomElement(using: &random), path[index] != "%" {
                    let byte = path.utf8[index]
                    path.replaceSubrange(index...index, with: String(format: "%%%02X", byte))
                }
            }
            if path.utf8.count < 2_000, !path.contains(" ") { made.insert(path) }
        }
        return made.sorted()
    }

    @Test func noSpellingOfAV1RouteRunsWithoutTheToken() async throws {
        let scratch = Scratch()
        let origin = try CachingOrigin()
        defer { origin.shutdown() }
        let token = "route-test-token"
        let service = try await RunningServer.start(scratch) { $0.tokens = [token] }
        let attachment = #"{"urls": ["\#(origin.url("photo.jpg"))"]}"#
        let payload = #"{"aps": {"alert": "a", "mutable-content": 1}, "image_url": "\#(origin.url("photo.jpg"))"}"#
        let routes = [("/v1/attachments", "POST", attachment), ("/v1/payloads", "POST", payload),
                      ("/v1/files/a/b/photo.jpg", "GET", "")]
        let spelt = routes.flatMap { route in Self.spellings.map { (name: $0.0, route: route, target: $0.1(route.0)) } }
        let statuses = try await Self.rawStatuses(port: service.port, spelt.map { ($0.route.1, $0.target, [], $0.route.2) })
        var answered: [String: Int] = [:]
        for (item, status) in zip(spelt, statuses) {
            answered[item.target] = status
            #expect(!(200..<300).contains(status), "\(item.route.1) \(item.target) (\(item.name)) answered \(status) without the token")
        }
        // The spellings the router does resolve to a route are refused for the token, not missed.
        for target in ["//v1/attachments", "///v1/attachments", "//v1//attachments", "/v1/attachments/"] {
            #expect(answered[target] == 401, "\(target): \(answered[target] ?? -1)")
        }
        #expect(try await Self.rawStatuses(port: service.port, [("POST", "//v1/payloads?rewrite=true", [], payload)]) == [401])
        let fuzzed = Self.fuzzedSpellings(routes.map(\.0), count: 1_000, seed: 0x5EED_2026_1127)
        #expect(fuzzed.count == 1_000)
        let requests = fuzzed.map { target in
            target.lowercased().contains("files") ? ("GET", target, [String](), "") : ("POST", target, [String](), attachment)
        }
        var byStatus: [Int: Int] = [:]
        for (request, status) in zip(requests, try await Self.rawStatuses(port: service.port, requests)) {
            byStatus[status, default: 0] += 1
            #expect(!(200..<300).contains(status), "\(request.0) \(request.1) answered \(status) without the token")
        }
        // Unknown paths are 404 with no work done: nothing named was fetched, by any of them.
        #expect(byStatus[404, default: 0] > 0 && byStatus[401, default: 0] > 0, "\(byStatus)")
        #expect(origin.requests("photo.jpg") == 0, "a request without the token made the service fetch")
        // The control: with the token, the doubled slash reaches the batch, so the checks above can fail.
        let allowed = try await Self.rawStatuses(port: service.port, [("POST", "//v1/attachments", ["Authorization: Bearer \(token)"], attachment)])[0]
        #expect(allowed == 200 && origin.requests("photo.jpg") == 1, "with the token: \(allowed)")
        // The metrics name the resolved route, not "unknown".
        let metrics = try await Exchange.send("GET", "\(service.base)/metrics").text
        #expect(metrics.contains(#"route="/v1/attachments",status="200""#), "\(metrics.split(separator: "\n").filter { $0.contains("route=") })")
        await service.stop()
    }

    @Test func everyRouteIsBehindTheTokenUnlessListedPublic() async throws {
        let scratch = Scratch()
        let service = try await RunningServer.start(scratch) { $0.tokens = ["t"] }
        let publicLabels = Set(Routes.all.filter(\.isPublic).map(\.label))
        #expect(publicLabels == Set(["/healthz", "/readyz", "/metrics", "/openapi.json", "/media", "/", "/inspector.css"]
            + InspectorPage.scripts.map { "/" + $0.name }))
        let requests = Routes.all.flatMap { route in
            route.methods.map { (route: route, method: $0.rawValue,
                                 path: route.pattern.replacingOccurrences(of: #"\{[a-z]+\}"#, with: "x", options: .regularExpression)) }
        }
        let statuses = try await Self.rawStatuses(port: service.port, requests.map { ($0.method, $0.path, [], "") })
        for (request, status) in zip(requests, statuses) {
            if request.route.isPublic {
                #expect(status != 401 && status > 0, "\(request.method) \(request.path) is public: \(status)")
            } else {
                #expect(status == 401, "\(request.method) \(request.path) answered \(status) without the token")
            }
        }
        await service.stop()
    }
}
