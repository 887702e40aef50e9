// Runs one batch through the library in a process of its own, under a cap on that process's
// memory, and reports what came back, for BatchMemoryTests: the test process's memory is shared
// with every test running beside it.
//
// batch-memory-check BASE_URL COUNT CAP_MIB [--streaming] [--window N]
//
// Request i is BASE_URL/media/photo.jpg?i=<i> for every hundredth i and BASE_URL/status/404?i=<i>
// otherwise: every URL distinct, so nothing is shared. A warm-up batch of 100 comes first (the
// decoder workers, libvips and the connection pool start once, whatever the batch's length);
// then the peak is reset and the batch runs. A watchdog thread stops the process with exit
// status 3 as soon as its resident memory passes CAP_MIB more than at the reset: a batch
// whose memory grows with its length fails there, rather than taking the machine's memory.
// `--window N` sets `maxAttachmentsInFlight` (`--window max`: every request started at once,
// no window at all: the cap then stops the run).
// One JSON object on standard output: count, growthBytes, elapsedMs, and `outcomes`: per
// request, in request order, "identifier url status code".
import AttachFetch
import Foundation
import ResidentMemory

let arguments = CommandLine.arguments
guard arguments.count >= 4, let count = Int(arguments[2]), let capMiB = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: batch-memory-check BASE_URL COUNT CAP_MIB [--streaming] [--window N|max]\n".utf8))
    exit(2)
}
let base = arguments[1]
let options = Array(arguments.dropFirst(4))
let streaming = options.contains("--streaming")
let window = options.firstIndex(of: "--window").flatMap { options.indices.contains($0 + 1) ? options[$0 + 1] : nil }
func request(_ index: Int, tag: String = "i") -> AttachmentRequest {
    AttachmentRequest(url: index % 100 == 0 ? "\(base)/media/photo.jpg?\(tag)=\(index)" : "\(base)/status/404?\(tag)=\(index)")
}

/// The requests, made one by one as the streamed batch reads them.
struct Requests: AsyncSequence, AsyncIteratorProtocol {
    typealias Failure = Never
    let count: Int
    var position = 0

    init(count: Int) { self.count = count }
    func makeAsyncIterator() -> Requests { self }
    mutating func next(isolation actor: isolated (any Actor)?) async -> AttachmentRequest? {
        guard position < count else { return nil }
        defer { position += 1 }
        return request(position)
    }
    mutating func next() async -> AttachmentRequest? { await next(isolation: nil) }
}

var configuration = AttachFetchConfiguration()
configuration.allowPrivateNetwork = true
// One origin answers every request, 404 for most: that is what is asked, not a failing host.
configuration.breaker.failures = Int.max
if let window { configuration.maxAttachmentsInFlight = window == "max" ? Int.max : Int(window) ?? 256 }
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("batch-memory-\(UUID().uuidString)").path
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
configuration.temporaryDirectory = directory
defer { try? FileManager.default.removeItem(atPath: directory) }

try await withAttachmentPipeline(configuration: configuration) { pipeline in
    _ = await pipeline.process((0..<100).map { request($0, tag: "warm") }, keepingFiles: false)
    let before = try ResidentMemory.resetPeak()
    let cap = before + capMiB << 20
    let watchdog = Thread {
        while true {
            let resident = (try? ResidentMemory.current()) ?? 0
            if resident > cap {
                FileHandle.standardError.write(Data("batch-memory-check: \(resident >> 20) MiB resident, over the cap of \(cap >> 20) MiB\n".utf8))
                _exit(3) // at once: exit's handlers would run under the batch's threads
            }
            usleep(5_000)
        }
    }
    watchdog.start()
    let start = ContinuousClock.now
    var outcomes = [String](repeating: "", count: count)
    func note(_ index: Int, _ descriptor: AttachmentDescriptor) {
        outcomes[index] = "\(descriptor.identifier) \(descriptor.url) \(descriptor.status.rawValue) \(descriptor.reason?.code.rawValue ?? "-")"
    }
    if streaming {
        let sequence = Requests(count: count)
        _ = await pipeline.process(streaming: sequence, deadline: .seconds(300), keepingFiles: false) { note($0, $1) }
    } else {
        let batch = await pipeline.process((0..<count).map { request($0) }, deadline: .seconds(300), keepingFiles: false)
        for (index, descriptor) in batch.attachments.enumerated() { note(index, descriptor) }
    }
    let elapsed = ContinuousClock.now - start
    let report: [String: Any] = [
        "count": count, "growthBytes": (try ResidentMemory.peak()) - before,
        "elapsedMs": Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000),
        "outcomes": outcomes,
    ]
    print(String(decoding: try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys]), as: UTF8.self))
}
