import Foundation

/// A fixed set of threads for blocking C work (libvips), so that it never runs on Swift's
/// cooperative pool, whose few threads must stay free for async code.
final class WorkerPool: Sendable {
    // Sendable: `jobs` and `stopping` are only touched with `condition` locked.
    private final class State: @unchecked Sendable {
        let condition = NSCondition()
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        var stopping = false
    }

    private let state = State()

    init(threads: Int, name: String) {
        for index in 0..<threads {
            let state = self.state
            let thread = Thread {
                // The kernel keeps 15 characters of a thread's name.
                Thread.current.name = String("\(name)-\(index)".prefix(15))
                WorkerPool.work(state)
            }
            thread.start()
        }
    }

    deinit {
        state.condition.lock()
        state.stopping = true
        state.condition.broadcast()
        state.condition.unlock()
    }

    func submit(_ job: @escaping @Sendable () -> Void) {
        state.condition.lock()
        state.jobs.append(job)
        state.condition.signal()
        state.condition.unlock()
    }

    private static func work(_ state: State) {
        while true {
            state.condition.lock()
            while state.head == state.jobs.count && !state.stopping { state.condition.wait() }
            if state.head == state.jobs.count {
                state.condition.unlock()
                return
            }
            let job = state.jobs[state.head]
            state.head += 1
            if state.head > 64 && state.head * 2 > state.jobs.count {
                state.jobs.removeFirst(state.head)
                state.head = 0
            }
            state.condition.unlock()
            job()
        }
    }
}
