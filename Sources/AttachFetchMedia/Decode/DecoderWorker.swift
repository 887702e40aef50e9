internal import CAttachFetchShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The decoder worker: a process that runs decode jobs for an `AttachmentPipeline`, one at a
/// time, read from standard input and answered on standard output (a socket the pipeline
/// holds). It is started once per pipeline thread and reused; when it dies (a decoder's
/// crash, a limit), only the job it was running fails and the pipeline starts another.
///
/// Before it touches any downloaded byte it caps itself (data memory, file size, no core
/// files, CPU time per job), forbids gaining privileges, leaves the network (a network
/// namespace of its own, where the kernel allows one), and installs a seccomp filter that
/// refuses the system calls decoding never needs: sockets, exec, ptrace.
public enum DecoderWorker {
    /// Limits a worker applies to itself, passed on its command line.
    package struct Limits: Equatable {
        package var memoryBytes: Int
        package var cpuSecondsPerJob: Int
        package var fileSizeBytes: Int
        var parent: pid_t

        package var arguments: [String] {
            ["--memory", "\(memoryBytes)", "--cpu", "\(cpuSecondsPerJob)", "--file-size", "\(fileSizeBytes)", "--parent", "\(parent)"]
        }

        /// The same, as the first message to a forked worker (`DecoderReserve`).
        package var handshake: Data { Data(arguments.joined(separator: " ").utf8) }

        package init?(handshake: Data) {
            self.init(arguments: String(decoding: handshake, as: UTF8.self).split(separator: " ").map(String.init))
        }

        init(memoryBytes: Int, cpuSecondsPerJob: Int, fileSizeBytes: Int, parent: pid_t) {
            self.memoryBytes = memoryBytes
            self.cpuSecondsPerJob = cpuSecondsPerJob
            self.fileSizeBytes = fileSizeBytes
            self.parent = parent
        }

        package init?(arguments: [String]) {
            var values: [String: Int] = [:]
            var index = 0
            while index + 1 < arguments.count {
                guard let value = Int(arguments[index + 1]) else { return nil }
                values[arguments[index]] = value
                index += 2
            }
            guard index == arguments.count, let memory = values["--memory"], let cpu = values["--cpu"],
                  let fileSize = values["--file-size"], let parent = values["--parent"] else { return nil }
            self.init(memoryBytes: memory, cpuSecondsPerJob: cpu, fileSizeBytes: fileSize, parent: pid_t(parent))
        }
    }

    /// Free heap bytes above which a worker hands pages back after a job.
    static let trimThreshold = 16 << 20

    /// How long a worker waits for its next job before it counts as idle and trims its heap.
    static let idleBeforeTrimMilliseconds: Int32 = 50

    /// The entry point of `attach-fetch-decoder`. Never returns.
    public static func main(arguments: [String]) -> Never {
        guard let limits = Limits(arguments: arguments) else {
            FileHandle.standardError.write(Data("attach-fetch-decoder is started by attach-fetch's pipeline, not by hand\n".utf8))
            exit(2)
        }
        serve(limits)
    }

    /// Confines this process with `limits`, then answers jobs on standard input and output
    /// until the pipeline closes the socket. Never returns.
    static func serve(_ limits: Limits) -> Never {
        confine(limits)
        do throws(AttachFetchError) { try Vips.ensureStarted() } catch {
            FileHandle.standardError.write(Data("attach-fetch-decoder: \(error.message)\n".utf8))
            exit(3)
        }
        _ = FFmpeg.startup
        var received: [Int32] = []
        while let frame = Frame.read(from: 0, descriptors: &received) {
            // The job's unnamed files arrive as descriptors, in the order the job names them:
            // read and written through these copies, closed once the job has run.
            let copies = received.map(UnnamedFile.adopting)
            received = []
            let answer: DecodeAnswer
            if let job = JobWire.decodeJob(frame), job.unnamedDescriptors.count == copies.count {
                allowCPU(seconds: limits.cpuSecondsPerJob)
                let toCopies = Dictionary(uniqueKeysWithValues: zip(job.unnamedDescriptors, copies.map(\.descriptor)))
                let toPipeline = Dictionary(uniqueKeysWithValues: toCopies.map { ($0.value, $0.key) })
                answer = withExtendedLifetime(copies) { job.replacingDescriptors(toCopies).run().replacingDescriptors(toPipeline) }
            } else {
                answer = DecodeAnswer(failure: Reason(code: .ioError, message: "the decoder worker could not read its job"))
            }
            guard let data = JobWire.encode(answer), Frame.write(data, to: 1) else { exit(4) }
            // A large decode's buffers are freed, but the allocator keeps the pages: hand them
            // back once the worker is idle, so that its resident size follows its current job,
            // not its largest one. While jobs keep coming the pages are reused instead: trimming
            // between the jobs of a batch made the next decode fault and zero them all again
            // (the profile in docs/performance.md). Small jobs leave too little to be worth it.
            if mallinfo2().fordblks > trimThreshold && !Frame.arrives(on: 0, withinMilliseconds: idleBeforeTrimMilliseconds) {
                malloc_trim(0)
            }
        }
        exit(0)
    }

    // MARK: Confinement

    private static func confine(_ limits: Limits) {
        // Gone with the thread that started it (and never outliving the pipeline's process).
        _ = af_prctl_set_parent_death_signal(SIGKILL)
        if getppid() != limits.parent { exit(5) }
        setLimit(RLIMIT_CORE, 0)
        setLimit(RLIMIT_FSIZE, limits.fileSizeBytes)
        // A worker built with AddressSanitizer (the sanitizer test runs) reserves terabytes of
        // shadow memory and reports leaks through ptrace at exit: it gets neither the memory
        // cap nor the seccomp filter, which would stop the sanitizer itself.
        let sanitized = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
        if !sanitized { setLimit(RLIMIT_DATA, limits.memoryBytes) }
        // A network namespace of its own holds only a loopback that is down: no route anywhere.
        // Unprivileged, that takes a user namespace too; where neither is allowed the seccomp
        // filter below still refuses sockets.
        // CLONE_NEWNET and CLONE_NEWUSER (<sched.h>, behind _GNU_SOURCE).
        let newNetwork: Int32 = 0x4000_0000, newUser: Int32 = 0x1000_0000
        if af_unshare(newNetwork) != 0 { _ = af_unshare(newUser | newNetwork) }
        _ = af_prctl_set_no_new_privs()
        if !sanitized { SystemCallFilter.install() }
    }

    private static func setLimit(_ resource: __rlimit_resource, _ value: Int) {
        var limit = rlimit(rlim_cur: rlim_t(value), rlim_max: rlim_t(value))
        _ = setrlimit(__rlimit_resource_t(resource.rawValue), &limit)
    }

    /// RLIMIT_CPU counts the whole process's time: each job gets `seconds` more than used so far
    /// (SIGXCPU ends the worker past it). The hard limit stays open so later jobs can be given theirs.
    private static func allowCPU(seconds: Int) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let used = Int(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + 1
        var limit = rlimit(rlim_cur: rlim_t(used + seconds), rlim_max: rlim_t.max)  // RLIM_INFINITY
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CPU.rawValue), &limit)
    }
}

/// Messages on the worker's socket: a 4-byte little-endian length, then that many bytes (JobWire).
enum Frame {
    /// A job or answer is small (paths, sizes, a message); anything larger is a broken peer.
    package static let maxBytes = 1 << 20

    package static func read(from fd: Int32) -> Data? {
        var descriptors: [Int32] = []
        defer { descriptors.forEach { close($0) } }
        return read(from: fd, descriptors: &descriptors)
    }

    /// A message and the descriptors that came with it (SCM_RIGHTS), appended to `descriptors`.
    package static func read(from fd: Int32, descriptors: inout [Int32]) -> Data? {
        guard let header = readExactly(fd, 4, descriptors: &descriptors) else { return nil }
        let length = Int(header[0]) | Int(header[1]) << 8 | Int(header[2]) << 16 | Int(header[3]) << 24
        guard length <= maxBytes else { return nil }
        return readExactly(fd, length, descriptors: &descriptors).map { Data($0) }
    }

    /// Whether a message is ready to read on `fd` within `milliseconds` (or the peer hung up).
    package static func arrives(on fd: Int32, withinMilliseconds milliseconds: Int32) -> Bool {
        var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&waiting, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            return ready != 0
        }
    }

    /// Sends a message; `descriptors` (at most AF_MAX_PASSED_DESCRIPTORS) go with its first
    /// byte as SCM_RIGHTS.
    package static func write(_ data: Data, to fd: Int32, descriptors: [Int32] = []) -> Bool {
        let length = data.count
        var bytes = [UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24 & 0xFF)]
        bytes.append(contentsOf: data)
        var offset = 0
        while offset < bytes.count {
            // MSG_NOSIGNAL: a peer that went away is an error here, not a SIGPIPE.
            let sent = bytes.withUnsafeBytes { buffer in
                offset == 0 ? af_send_with_descriptors(fd, buffer.baseAddress!, buffer.count, descriptors, Int32(descriptors.count))
                    : send(fd, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    private static func readExactly(_ fd: Int32, _ count: Int, descriptors: inout [Int32]) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        var arrived = [Int32](repeating: -1, count: Int(AF_MAX_PASSED_DESCRIPTORS))
        while offset < count {
            var arrivedCount: Int32 = 0
            let got = bytes.withUnsafeMutableBytes {
                af_receive_with_descriptors(fd, $0.baseAddress! + offset, count - offset, &arrived, &arrivedCount)
            }
            descriptors.append(contentsOf: arrived.prefix(Int(arrivedCount)))
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            offset += got
        }
        return bytes
    }
}
