import AttachFetchCore
import AttachFetchDecoderProtocol
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Decoder workers started when the program starts, for its pipelines to take instead of
/// starting `attach-fetch-decoder` when their first job arrives.
///
/// Why: a started worker spends about 80 ms of CPU before its first job, binding the symbols of
/// the 180-odd libraries libvips and FFmpeg bring (measured with perf: mostly the dynamic
/// loader's lookups). Started at the top of `main`, that time passes while the program parses
/// its arguments, resolves names and downloads.
///
/// Each is executed, never forked from the program: it holds nothing of the program's memory
/// or environment (credentials among them), only `DecoderWorker.environment` and its socket.
/// It waits for the limits the pipeline that takes it sends first, and applies them before it
/// reads any job, so it is confined exactly as a worker started for a job. A pipeline takes
/// reserved workers only when its configuration names no `decoderExecutable`; it starts its
/// own for the rest, and for every replacement.
public enum DecoderReserve {
    package struct Worker {
        package let pid: pid_t
        package let socket: Int32
    }

    private static let workers = Mutex<[Worker]>([])

    /// Starts `count` decoder workers (`attach-fetch-decoder` beside the program) to be taken by
    /// the first pipelines that start workers. Call it early in `main`. Returns how many were
    /// started: fewer when the decoder is not there or a start fails.
    @discardableResult
    public static func start(count: Int) -> Int {
        guard count > 0, let executable = DecoderProcess.executableBesideProgram() else { return 0 }
        var started: [Worker] = []
        for _ in 0..<count {
            guard let worker = try? DecoderProcess.spawn(executable, arguments: [DecoderWorker.reservedArgument, "--parent", "\(getpid())"]) else { break }
            started.append(Worker(pid: worker.pid, socket: worker.socket))
        }
        workers.withLock { $0.append(contentsOf: started) }
        return started.count
    }

    /// The former name of ``start(count:)``, from when reserved workers were forks of the program.
    @available(*, deprecated, renamed: "start(count:)")
    @discardableResult
    public static func fork(count: Int) -> Int { start(count: count) }

    /// Whether a reserved worker is left.
    static var hasWorkers: Bool { workers.withLock { !$0.isEmpty } }

    /// A reserved worker, no longer reserved; nil when none is left.
    package static func take() -> Worker? {
        workers.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }
}
