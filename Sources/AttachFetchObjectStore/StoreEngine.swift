package import CCurl
import AttachFetchCore
import AttachFetchTransfer
import Foundation
import Logging
import Synchronization
internal import Tracing

/// Runs every object-store request of one pipeline on a `CurlEngine` thread of its own, the
/// same engine core as the downloads' `TransferEngine`, so an upload never blocks a thread of
/// the cooperative pool, and never takes a download's slot.
package final class StoreEngine: CurlEngineWorkload, @unchecked Sendable {
    // @unchecked Sendable: `shared` is behind a lock; `active` is used only by the engine thread;
    // `core.wakeup()` is safe from any thread.
    private struct Shared {
        package var queue: [StoreCall] = []
        package var stopping = false
    }

    private let shared = Locked(Shared())
    private let core: CurlEngine
    private let credentials: ObjectStoreCredentials?
    private let tracesCalls: Bool
    private let region: String
    private let maxConcurrent: Int
    private let clock: AttachFetchClock
    private var active: [UnsafeMutableRawPointer: StoreCall] = [:]

    /// Without `credentials` requests go unsigned (the trace exporter's engine).
    /// - Parameter tracesCalls: each call is a span (`attach_fetch.store`); off for the trace
    ///   exporter's own engine.
    package init(credentials: ObjectStoreCredentials?, region: String, maxConcurrent: Int, clock: AttachFetchClock,
         tracesCalls: Bool = true) throws(AttachFetchError) {
        self.tracesCalls = tracesCalls
        self.clock = clock
        self.core = try CurlEngine(threadName: "af-store", maxIdleConnections: maxConcurrent)
        self.credentials = credentials
        self.region = region
        self.maxConcurrent = maxConcurrent
        core.start(self)
    }

    /// Carries out one request. Cancelling the calling task stops it (`cancelled`).
    package func perform(_ request: StoreRequest) async -> Result<StoreResponse, StoreCallFailure> {
        guard tracesCalls else { return await performUntraced(request) }
        let span = InstrumentationSystem.tracer.startSpan("attach_fetch.store", ofKind: .client)
        defer { span.end() }
        if span.isRecording {
            span.attributes["http.request.method"] = request.method.rawValue
            ClientSpanAttributes.record(url: request.url, on: span)
        }
        let answer = await performUntraced(request)
        if span.isRecording {
            switch answer {
            case .success(let response): span.attributes["http.response.status_code"] = response.status
            case .failure(let failure):
                span.attributes["error.type"] = "\(failure.kind)"
                span.setStatus(SpanStatus(code: .error, message: "\(failure.kind)"))
            }
        }
        return answer
    }

    private func performUntraced(_ request: StoreRequest) async -> Result<StoreResponse, StoreCallFailure> {
        let call: StoreCall
        do { call = try StoreCall(request) } catch { return .failure(.init(kind: .local, message: error.message)) }
        let accepted = shared.withLock { shared in
            if !shared.stopping { shared.queue.append(call) }
            return !shared.stopping
        }
        guard accepted else { return .failure(.init(kind: .cancelled, message: "the pipeline was shut down")) }
        core.wakeup()
        let answer = await withTaskCancellationHandler {
            await call.result.wait()
        } onCancel: {
            // The call's result is abandoned by its own wait: the engine sees that when woken.
            core.wakeup()
        }
        return answer ?? .failure(.init(kind: .cancelled, message: "the request was cancelled"))
    }

    /// Stops the thread after finishing every call as cancelled. Blocks until it has.
    package func shutdown() {
        shared.withLock { $0.stopping = true }
        core.wakeup()
        core.waitUntilStopped()
    }

    // MARK: Engine thread (CurlEngineWorkload)

    package func turn(_ multi: CurlMulti) -> Duration? {
        for (handle, call) in active where call.result.isAbandoned {
            finish(handle, curlCode: nil, cancelled: true)
        }
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
            return nil
        }
        for call in starting where !call.result.isAbandoned { start(call, in: multi) }
        return .seconds(1)
    }

    package func completed(_ easy: UnsafeMutableRawPointer, result: CURLcode, in multi: CurlMulti) {
        finish(easy, curlCode: result, cancelled: false)
    }

    package func multiFailed(_ failure: Reason, in multi: CurlMulti) {
        for handle in Array(active.keys) {
            guard let call = active.removeValue(forKey: handle) else { continue }
            _ = multi.remove(handle)
            _ = call.complete(curlCode: nil, cancelled: false)
            call.result.deliver(.failure(.init(kind: .local, message: failure.message)))
        }
    }

    private func start(_ call: StoreCall, in multi: CurlMulti) {
        if let failure = call.prepare(credentials: credentials, region: region, now: clock.now) {
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
        _ = core.multi.remove(handle)
        call.result.deliver(call.complete(curlCode: curlCode, cancelled: cancelled))
    }
}
