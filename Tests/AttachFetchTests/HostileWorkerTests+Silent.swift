import Foundation
import Testing
@testable import AttachFetch

extension HostileWorkerTests {
    /// A worker that never answers costs its attachment the deadline only, and is ended: each
    /// of two batches is answered by its deadline, and the worker that held its job is gone.
    @Test("aWorkerThatNeverAnswersIsEndedAndCostsItsAttachmentTheDeadlineOnly, within 300 ms of slack")
    func aWorkerThatNeverAnswersIsEndedAndCostsItsAttachmentTheDeadlineOnly() async throws {
        let tools = Scratch()
        let executable = try Self.worker("silent", in: tools)
        try await withPipeline(Scratch(), { $0.decoderExecutable = executable; $0.thumbnailThreads = 1; $0.probeThreads = 1 }) { pipeline in
            try await withMediaServer { server in
                var ended: Set<pid_t> = []
                for _ in 0..<2 {
                    let started = ContinuousClock.now
                    let batch = Task { await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg")], deadline: .seconds(2)) }
                    var worker: pid_t?
                    try await waitUntil("a worker of this test holding the job") {
                        worker = TestProcess.workers(startedFrom: executable).first { !ended.contains($0) }
                        return worker != nil
                    }
                    let d = await batch.value.attachments[0]
                    expectNear(ContinuousClock.now - started, .seconds(2), "the batch of a silent worker")
                    // A thumbnail is the one step a late image may go without (`skippedAtDeadline`).
                    #expect(d.status == .timedOut || d.reason?.code == .deadlineExceeded || (d.thumbnail == nil && d.skippedAtDeadline != nil),
                            "\(d.status) \(d.reason?.message ?? "") \(d.skippedAtDeadline ?? [])")
                    let pid = try #require(worker)
                    try await waitUntil("the silent worker \(pid) to be ended", timeout: .seconds(10)) {
                        !TestProcess.workers(startedFrom: executable).contains(pid)
                    }
                    ended.insert(pid)
                }
            }
        }
    }
}
