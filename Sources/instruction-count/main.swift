// The instruction-count guard's driver (Benchmarks/instruction-guard runs it under callgrind):
// one batch of the URLs given (none: an empty batch), through the real pipeline and its decoder worker processes,
// with the settings fixed (not derived from the machine's cores) so that the count is the same
// on every machine. Synchronous at the top and ended with _exit: callgrind counts what the
// batch did, not the runtime's teardown (which crashed under valgrind with the async main).
import AttachFetch
import Foundation

// No URLs: an empty batch, for the cost of starting and stopping (the guard subtracts it).
let urls = CommandLine.arguments.dropFirst()
// As the CLI starts: no optional libvips modules, and the fork server started now (its 1 image
// worker and 1 probe worker are forked from it, as configured below). One image worker: each worker pays its
// first uses (libvips' loaders, the Swift runtime's metadata) at its first job of each kind, so
// with two the count moved by 2-5 % with which worker took the WebP and the PNG.
setenv("VIPSHOME", "/dev/null", 0)
DecoderReserve.start(count: 2)
var configuration = AttachFetchConfiguration()
configuration.allowPrivateNetwork = true
configuration.maxConcurrentTransfers = 4
configuration.thumbnailThreads = 1
configuration.probeThreads = 1
// Under callgrind every thread waits its turn for valgrind's one lock, about 50 times slower:
// beside the API and browser tests, 2 of the 44 attachments once met the default 10-s request
// or 3-s stall timeout. The batch is to be counted whole, and a timeout's length is no work.
configuration.timeout = .init(connect: .seconds(300), request: .seconds(300), stall: .seconds(300))
configuration.temporaryDirectory = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
// Workers end when their sockets close, and are waited for below: callgrind writes a
// process's counts only when it exits on its own.
configuration.decoderExitGraceMilliseconds = 600_000

/// The batch's statuses, counted, set once by the task before it signals.
final class Finished: @unchecked Sendable {
    // @unchecked Sendable: written once before `done.signal()`, read after `done.wait()`.
    var byStatus: [String: Int] = [:]
    var failure: String?
    let done = DispatchSemaphore(value: 0)
}

nonisolated func runBatch(_ requests: [AttachmentRequest], _ configuration: AttachFetchConfiguration) async throws -> AttachmentBatch {
    try await withAttachmentPipeline(configuration: configuration) { pipeline in
        await pipeline.process(requests, deadline: .seconds(600))
    }
}

let finished = Finished()
let requests = urls.map { AttachmentRequest(url: $0) }
Task.detached { [configuration] in
    do {
        let batch = try await runBatch(requests, configuration)
        for descriptor in batch.attachments { finished.byStatus[descriptor.status.rawValue, default: 0] += 1 }
    } catch {
        finished.failure = "\(error)"
    }
    finished.done.signal()
}
finished.done.wait()
// The pipeline's threads close the workers' sockets as they end, and the fork server's is
// closed here (it would wait for requests until this process ends); every one is waited for.
DecoderReserve.stop()
var status: Int32 = 0
while wait(&status) > 0 || errno == EINTR {}
if let failure = finished.failure {
    FileHandle.standardError.write(Data("instruction-count: \(failure)\n".utf8))
    _exit(1)
}
let line = finished.byStatus.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
FileHandle.standardOutput.write(Data("attachments=\(requests.count) \(line)\n".utf8))
_exit(finished.byStatus["ready", default: 0] == requests.count ? 0 : 1)
