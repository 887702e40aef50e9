// The campaign fan-out: 10,000 notifications referencing 20 distinct URLs (JPEG, oversize
// JPEG, WebP, MP4), in batches of 100, 8 batches at once, through one pipeline — with the
// result cache on, then the same load with it off (coalescing of work in flight stays on).
// Reports origin requests (with the cache on it must be exactly 20), wall time, peak RSS of
// the pipeline process and of its decoder workers, and per-notification p50/p99 once warm
// (after the first wave of 8 batches). Writes results/fanout.json; exits 1 when a figure
// breaks Thresholds/fanout.json.   Usage: swift run -c release FanOut [NOTIFICATIONS]
import AttachFetch
import Foundation
import LoopbackHTTPServer

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
let testMedia = root.deletingLastPathComponent().appendingPathComponent("TestMedia").path
let notifications = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 10_000 : 10_000
let batchSize = 100, concurrentBatches = 8

/// The media directory: TestMedia plus a noise JPEG over the 10 MiB image limit (made once
/// with ffmpeg), which the pipeline must fit.
let mediaDirectory: String = {
    let directory = root.appendingPathComponent(".fanout-media").path
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    for name in ["photo.jpg", "rotated.jpg", "image.webp", "alpha.webp", "animated.webp", "clip.mp4", "rotated.mp4", "long.mp4"] {
        let target = "\(directory)/\(name)"
        if !FileManager.default.fileExists(atPath: target) { try? FileManager.default.copyItem(atPath: "\(testMedia)/\(name)", toPath: target) }
    }
    let noise = "\(directory)/oversize.jpg"
    if !FileManager.default.fileExists(atPath: noise) {
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        ffmpeg.arguments = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                            "nullsrc=s=5400x3600,geq=r='random(1)*255':g='random(2)*255':b='random(3)*255'",
                            "-frames:v", "1", "-q:v", "1", noise]
        try! ffmpeg.run()
        ffmpeg.waitUntilExit()
        precondition(ffmpeg.terminationStatus == 0, "ffmpeg could not make the oversize JPEG")
    }
    return directory
}()

let routes = MediaRoutes(directory: mediaDirectory)
let server = try LoopbackHTTPServer { request, connection in routes.handle(request, connection) }

/// 20 distinct URLs: 8 JPEG, 3 oversize JPEG, 5 WebP, 4 MP4 (the same file under another query is another URL).
let urls: [String] = {
    var names: [String] = []
    names += (0..<6).map { "photo.jpg?n=\($0)" } + (0..<2).map { "rotated.jpg?n=\($0)" }
    names += (0..<3).map { "oversize.jpg?n=\($0)" }
    names += (0..<3).map { "image.webp?n=\($0)" } + ["alpha.webp", "animated.webp"]
    names += (0..<2).map { "clip.mp4?n=\($0)" } + ["rotated.mp4", "long.mp4"]
    precondition(names.count == 20)
    return names.map { "\(server.baseURL)/media/\($0)" }
}()

func peakKiB(_ pid: Int32) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
}

/// Peak RSS of this process's children (the decoder workers), summed.
func workersPeakKiB() -> Int {
    let me = getpid()
    var total = 0
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let pid = Int32(entry),
              let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        if fields.count > 2, Int32(fields[1]) == me { total += peakKiB(pid) }
    }
    return total
}

struct Run: Codable {
    var cache: Bool
    var notifications: Int
    var originRequests: Int
    var wallSeconds: Double
    var peakRSSMiB: Double
    var workersPeakRSSMiB: Double
    var warmP50Ms: Int
    var warmP99Ms: Int
    var ready: Int
    var cacheStatuses: [String: Int]
}

func percentile(_ sorted: [Int], _ q: Double) -> Int {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded(.up)))]
}

func run(cache: Bool) async throws -> Run {
    var configuration = AttachFetchConfiguration()
    configuration.allowPrivateNetwork = true // the origin is on loopback
    configuration.cache = cache ? ResultCaching() : nil
    // Linux: writing 5 to clear_refs resets the peak RSS (VmHWM), so each run reports its own.
    let clearRefs = open("/proc/self/clear_refs", O_WRONLY)
    if clearRefs >= 0 { _ = write(clearRefs, "5", 1); close(clearRefs) }
    let pipeline = try AttachmentPipeline(configuration: configuration)
    let before = server.requestLog.count
    let batches = (notifications + batchSize - 1) / batchSize
    let started = ContinuousClock.now
    var warm: [Int] = []
    var statuses: [String: Int] = [:]
    var ready = 0
    var workersPeak = 0
    try await withThrowingTaskGroup(of: (Int, AttachmentBatch).self) { group in
        var next = 0
        func add() {
            let index = next
            next += 1
            let requests = (0..<min(batchSize, notifications - index * batchSize)).map { n in
                AttachmentRequest(url: urls[(index * 7 + n * 3) % urls.count], identifier: "n\(index)-\(n)")
            }
            group.addTask {
                let directory = NSTemporaryDirectory() + "fanout-\(UUID().uuidString)"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
                let batch = await pipeline.process(requests, deadline: .seconds(25), outputDirectory: directory)
                // A push backend hands the files on and removes them; so does the benchmark.
                try? FileManager.default.removeItem(atPath: directory)
                return (index, batch)
            }
        }
        for _ in 0..<min(concurrentBatches, batches) { add() }
        while let (index, batch) = try await group.next() {
            for d in batch.attachments {
                if d.status == .ready { ready += 1 }
                statuses[d.cache?.rawValue ?? "none", default: 0] += 1
                if index >= concurrentBatches { warm.append(d.timings.total) }
            }
            workersPeak = max(workersPeak, workersPeakKiB())
            if next < batches { add() }
        }
    }
    let wall = ContinuousClock.now - started
    await pipeline.shutdown()
    warm.sort()
    return Run(cache: cache, notifications: notifications, originRequests: server.requestLog.count - before,
               wallSeconds: Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18,
               peakRSSMiB: Double(peakKiB(getpid())) / 1024, workersPeakRSSMiB: Double(workersPeak) / 1024,
               warmP50Ms: percentile(warm, 0.5), warmP99Ms: percentile(warm, 0.99), ready: ready, cacheStatuses: statuses)
}

// Cache off first (its origin work warms nothing the cache-on run could reuse: another pipeline).
let off = try await run(cache: false)
let on = try await run(cache: true)
server.shutdown()

for r in [on, off] {
    print(String(format: "cache %@: %5d notifications, %5d origin requests, %6.2f s wall (%.0f notifications/s), warm p50 %d ms, p99 %d ms, peak RSS %.0f MiB (+ workers %.0f MiB), ready %d, %@",
                 r.cache ? "on " : "off", r.notifications, r.originRequests, r.wallSeconds, Double(r.notifications) / r.wallSeconds,
                 r.warmP50Ms, r.warmP99Ms, r.peakRSSMiB, r.workersPeakRSSMiB, r.ready,
                 r.cacheStatuses.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))
}
print(String(format: "cache on / off: wall %.2fx, origin requests %d vs %d", on.wallSeconds / off.wallSeconds, on.originRequests, off.originRequests))

let resultsDirectory = root.appendingPathComponent("results")
try? FileManager.default.createDirectory(at: resultsDirectory, withIntermediateDirectories: true)
let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
try encoder.encode(["cacheOn": on, "cacheOff": off]).write(to: resultsDirectory.appendingPathComponent("fanout.json"))

let thresholds = try JSONSerialization.jsonObject(with: Data(contentsOf: root.appendingPathComponent("Thresholds/fanout.json"))) as! [String: Any]
var failed = false
if notifications == 10_000, let exact = thresholds["originRequestsCacheOn"] as? Int, on.originRequests != exact {
    print("THRESHOLD: cache-on origin requests \(on.originRequests) != \(exact)")
    failed = true
}
if let limit = thresholds["cacheOnWallRatioMax"] as? Double, on.wallSeconds / off.wallSeconds > limit {
    print("THRESHOLD: cache on/off wall ratio \(on.wallSeconds / off.wallSeconds) > \(limit)")
    failed = true
}
if let limit = thresholds["warmP99MsMax"] as? Int, on.warmP99Ms > limit {
    print("THRESHOLD: warm p99 \(on.warmP99Ms) ms > \(limit) ms")
    failed = true
}
if on.ready != on.notifications || off.ready != off.notifications {
    print("not every notification was ready: \(on.ready), \(off.ready)")
    failed = true
}
exit(failed ? 1 : 0)
