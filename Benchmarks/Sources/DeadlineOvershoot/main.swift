// Measures how late the pipeline is against its own clocks, over loopback:
// - batch deadline overshoot: return time minus deadline, for batches whose every URL stalls;
// - stall-timeout and request-timeout overshoot: elapsed minus the configured timeout.
// Prints p50 / p99 / max, writes results/deadline.json, and exits 1 when a figure is above
// Thresholds/deadline.json.   Usage: swift run -c release DeadlineOvershoot [BATCHES]
import AttachFetch
import Foundation
import LoopbackHTTPServer

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
let testMedia = root.deletingLastPathComponent().appendingPathComponent("TestMedia").path
let batches = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 200 : 200

let routes = MediaRoutes(directory: testMedia)
let server = try LoopbackHTTPServer { request, connection in routes.handle(request, connection) }

func milliseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}

struct Summary: Codable {
    var samples: Int
    var p50: Double
    var p99: Double
    var max: Double
    var min: Double

    init(_ values: [Double]) {
        let sorted = values.sorted()
        func at(_ q: Double) -> Double { sorted[Swift.min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded(.up)))] }
        samples = sorted.count
        p50 = at(0.5)
        p99 = at(0.99)
        max = sorted.last ?? 0
        min = sorted.first ?? 0
    }

    var line: String { String(format: "p50 %6.2f ms   p99 %6.2f ms   max %6.2f ms   (min %.2f, n=%d)", p50, p99, max, min, samples) }
}

var configuration = AttachFetchConfiguration()
configuration.allowPrivateNetwork = true // the server is on loopback
let pipeline = try AttachmentPipeline(configuration: configuration)

// 1. Batch deadline: 4 URLs that never answer, a 250 ms deadline, default timeouts (all longer).
var deadlineOvershoot: [Double] = []
for index in 0..<batches {
    let deadline = Duration.milliseconds(250)
    let requests = (0..<4).map { AttachmentRequest(url: "\(server.baseURL)/fault/silent?b=\(index)&n=\($0)") }
    let started = ContinuousClock.now
    let batch = await pipeline.process(requests, deadline: deadline)
    deadlineOvershoot.append(milliseconds(ContinuousClock.now - started - deadline))
    precondition(batch.attachments.allSatisfy { $0.reason?.code == .deadlineExceeded })
}

/// Elapsed time beyond `timeout` for single requests to `path` on a pipeline whose
/// configuration `adjust` shortens one timeout.
@MainActor
func timeoutOvershoot(_ path: String, timeout: Duration,
                      _ adjust: (inout AttachFetchConfiguration) -> Void) async throws -> [Double] {
    var adjusted = configuration
    adjust(&adjusted)
    let timedPipeline = try AttachmentPipeline(configuration: adjusted)
    var overshoot: [Double] = []
    for index in 0..<batches {
        let started = ContinuousClock.now
        let batch = await timedPipeline.process([AttachmentRequest(url: "\(server.baseURL)/\(path)?n=\(index)")])
        overshoot.append(milliseconds(ContinuousClock.now - started - timeout))
        precondition(batch.attachments[0].reason?.code == .timeout)
    }
    return overshoot
}

// 2. Stall timeout (300 ms) against a server that answers headers and then nothing.
let stallOvershoot = try await timeoutOvershoot("stall/photo.jpg", timeout: .milliseconds(300)) {
    $0.timeout.stall = .milliseconds(300)
}
// 3. Request timeout (300 ms) against a server that drips a byte a second.
let requestOvershoot = try await timeoutOvershoot("fault/drip", timeout: .milliseconds(300)) {
    $0.timeout.request = .milliseconds(300)
}
server.shutdown()

let results = [
    "deadlineOvershoot": Summary(deadlineOvershoot),
    "stallTimeoutOvershoot": Summary(stallOvershoot),
    "requestTimeoutOvershoot": Summary(requestOvershoot),
]
print("batch deadline overshoot (250 ms deadline, 4 silent URLs): \(results["deadlineOvershoot"]!.line)")
print("stall timeout overshoot (300 ms):                         \(results["stallTimeoutOvershoot"]!.line)")
print("request timeout overshoot (300 ms):                       \(results["requestTimeoutOvershoot"]!.line)")

let resultsDirectory = root.appendingPathComponent("results")
try? FileManager.default.createDirectory(at: resultsDirectory, withIntermediateDirectories: true)
let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
try encoder.encode(results).write(to: resultsDirectory.appendingPathComponent("deadline.json"))

let thresholds = try JSONSerialization.jsonObject(with: Data(contentsOf: root.appendingPathComponent("Thresholds/deadline.json"))) as! [String: Any]
var failed = false
for (name, value) in [("deadlineOvershootP99Ms", results["deadlineOvershoot"]!.p99),
                      ("deadlineOvershootMaxMs", results["deadlineOvershoot"]!.max),
                      ("stallTimeoutOvershootP99Ms", results["stallTimeoutOvershoot"]!.p99),
                      ("requestTimeoutOvershootP99Ms", results["requestTimeoutOvershoot"]!.p99)] {
    guard let limit = thresholds[name] as? Double else { continue }
    if value > limit {
        print("ABOVE THRESHOLD: \(name) \(String(format: "%.2f", value)) ms > \(limit) ms")
        failed = true
    }
}
exit(failed ? 1 : 0)
