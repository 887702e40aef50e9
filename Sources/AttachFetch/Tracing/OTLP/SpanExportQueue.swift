import DequeModule
import Synchronization

/// The spans waiting to be exported: bounded, so that a collector that is slow or down costs
/// memory up to `capacity` spans and then drops, never blocks. Counts what it dropped and what
/// was exported, for the service's metrics. `push` takes a lock and makes no system call.
package final class SpanExportQueue: Sendable {
    package let capacity: Int
    private let spans = Locked(Deque<FinishedSpan>())
    /// Spans never exported: the queue was full, or their batch's export failed.
    package let dropped = Atomic<Int>(0)
    package let exported = Atomic<Int>(0)
    /// Exports the collector refused or did not answer in time.
    package let failedExports = Atomic<Int>(0)

    package init(capacity: Int) {
        self.capacity = capacity
    }

    func push(_ span: FinishedSpan) {
        let kept = spans.withLock { spans in
            guard spans.count < capacity else { return false }
            spans.append(span)
            return true
        }
        if !kept { dropped.add(1, ordering: .relaxed) }
    }

    /// Up to `count` spans, oldest first.
    func take(_ count: Int) -> [FinishedSpan] {
        spans.withLock { spans in
            let taken = Array(spans.prefix(count))
            spans.removeFirst(taken.count)
            return taken
        }
    }

    package var waiting: Int { spans.withLock { $0.count } }
}
