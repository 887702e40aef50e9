// The transfer queue under a burst: 10,000 requests queued at once over 8 transfer slots,
// (a) in one batch, (b) in 100 batches of 100 running together. Every URL is distinct (no
// coalescing) and answers 404 at once from the loopback server, so the figure is the engine's
// own cost per request: queueing, handing out slots fairly, finishing. 3 rounds each; prints
// requests/s per round and the median.   Usage: swift run -c release TransferQueueLoad [REQUESTS]
import AttachFetch
import Foundation
import LoopbackHTTPServer

let requests = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 10_000 : 10_000
let routes = MediaRoutes(directory: FileManager.default.temporaryDirectory.path)
let server = try LoopbackHTTPServer { request, connection in routes.handle(request, connection) }
var configuration = AttachFetchConfiguration()
configuration.allowPrivateNetwork = true
configuration.maxConcurrentTransfers = 8
let pipeline = try AttachmentPipeline(configuration: configuration)

func url(_ index: Int) -> AttachmentRequest { AttachmentRequest(url: "\(server.baseURL)/status/404?n=\(index)-\(UInt32.random(in: 0...UInt32.max))") }

func oneBatch() async -> Double {
    let started = ContinuousClock.now
    let batch = await pipeline.process((0..<requests).map(url), deadline: .seconds(600))
    precondition(batch.attachments.allSatisfy { $0.reason?.code == .httpStatus }, "every request answered 404")
    return Double(requests) / (ContinuousClock.now - started).seconds
}

func manyBatches() async -> Double {
    let started = ContinuousClock.now
    await withTaskGroup(of: Void.self) { group in
        for batch in 0..<100 {
            group.addTask {
                let result = await pipeline.process((0..<(requests / 100)).map { url(batch * 1_000_000 + $0) }, deadline: .seconds(600))
                precondition(result.attachments.allSatisfy { $0.reason?.code == .httpStatus })
            }
        }
    }
    return Double(requests) / (ContinuousClock.now - started).seconds
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

for (name, run) in [("one batch of \(requests)", oneBatch), ("100 batches of \(requests / 100)", manyBatches)] as [(String, () async -> Double)] {
    var rates: [Double] = []
    for _ in 0..<3 { rates.append(await run()) }
    let median = rates.sorted()[1]
    print("\(name): \(rates.map { String(format: "%.0f", $0) }.joined(separator: ", ")) requests/s; median \(String(format: "%.0f", median))")
}
await pipeline.shutdown()
server.shutdown()
