internal import CCurl
import Foundation
import Logging
import Synchronization

/// Runs every object-store request of one pipeline on one dedicated thread, with a libcurl
/// multi handle of its own: the same kind of engine as the downloads' `TransferEngine`, so an
/// upload never blocks a thread of the cooperative pool, and never takes a download's slot.
final class StoreEngine: @unchecked Sendable {
    // @unchecked Sendable: `shared` is behind a lock; `multi` and `active` are used only by the
    // engine thread, except `multi.wakeup()`, which libcurl documents as safe from any thread.
    private struct Shared {
        var queue: [StoreCall] = []
        var stopping = false
    }

    private let shared = Locked(Shared())
    private let multi: CurlMulti
    private let credentials: ObjectStoreCredentials
    private let region: String
    private let maxConcurrent: Int
    private var active: [UnsafeMutableRawPointer: StoreCall] = [:]
    private let stopped = DispatchSemaphore(value: 0)

    init(credentials: ObjectStoreCredentials, region: String, maxConcurrent: Int) throws(AttachFetchError) {
        self.multi = try CurlMulti(maxIdleConnections: maxConcurrent)
        self.credentials = credentials
        self.region = region
        self.maxConcurrent = maxConcurrent
        let thread = Thread { [self] in
            nameCurrentThread("af-store")
            self.run()
        }
        thread.start()
    }

    /// Carries out one request. Cancelling the calling task stops it (`cancelled`).
    func perform(_ request: StoreRequest) async -> Result<StoreResponse, StoreCallFailure> {
        let call: StoreCall
        do { call = try StoreCall(request) } catch { return .failure(.init(kind: .local, message: error.message)) }
        let accepted = shared.withLock { shared in
            if !shared.stopping { shared.queue.append(call) }
            return !shared.stopping
        }
        guard accepted else { return .failure(.init(kind: .cancelled, message: "the pipeline was shut down")) }
        multi.wakeup()
        let answer = await withTaskCancellationHandler {
            await call.result.wait()
        } onCancel: {
            // The call's result is abandoned by its own wait: the engine sees that when woken.
            multi.wakeup()
        }
        return answer ?? .failure(.init(kind: .cancelled, message: "the request was cancelled"))
    }

    /// Stops the thread after finishing every call as cancelled. Blocks until it has.
    func shutdown() {
        shared.withLock { $0.stopping = true }
        multi.wakeup()
        stopped.wait()
    }

    // MARK: Engine thread

    private func run() {
        while true {
            let free = maxConcurrent - active.count
            let (starting, stopping) = shared.withLock { shared -> ([StoreCall], Bool) in
                let count = shared.stopping ? shared.queue.count : min(free, shared.queue.count)
                let starting = Array(shared.queue.prefix(count))
                shared.queue.removeFirst(count)
                return (starting, shared.stopping)
            }
            if stopping {
                for call in starting { call.result.deliver(.failure(.init(kind: .cancelled, message: "the pipeline was shut down"))) }
                for handle in Array(active.keys) { finish(handle, curlCode: nil, cancelled: true) }
                stopped.signal()
                return
            }
            for call in starting where !call.result.isAbandoned { start(call) }
            for (handle, call) in active where call.result.isAbandoned {
                finish(handle, curlCode: nil, cancelled: true)
            }
            var running: Int32 = 0
            _ = multi.perform(running: &running)
            while let (easy, code) = multi.nextDone() { finish(easy, curlCode: code, cancelled: false) }
            var timeout = 1000
            if case .success(let wanted) = multi.timeout(), wanted >= 0 { timeout = min(timeout, wanted) }
            if shared.withLock({ !$0.queue.isEmpty && active.count < maxConcurrent }) { timeout = 0 }
            if multi.poll(milliseconds: Int32(timeout)) != nil { Thread.sleep(forTimeInterval: 0.01) }
        }
    }

    private func start(_ call: StoreCall) {
        if let failure = call.prepare(credentials: credentials, region: region) {
            _ = call.complete(curlCode: nil, cancelled: false)
            call.result.deliver(.failure(failure))
            return
        }
        if let failure = multi.add(call.handle) {
            _ = call.complete(curlCode: nil, cancelled: false)
            call.result.deliver(.failure(.init(kind: .local, message: failure.message)))
            return
        }
        active[call.handle] = call
    }

    private func finish(_ handle: UnsafeMutableRawPointer, curlCode: CURLcode?, cancelled: Bool) {
        guard let call = active.removeValue(forKey: handle) else { return }
        _ = multi.remove(handle)
        call.result.deliver(call.complete(curlCode: curlCode, cancelled: cancelled))
    }
}
