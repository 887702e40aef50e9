import Foundation
import Testing
import CRawSystemCall
@testable import AttachFetch

/// What a decoder taken over can do once confined (docs/security.md, "What a compromised
/// decoder can do"): `filter-check` confines itself exactly as a worker does, then tries each
/// thing and reports its errno.
@Suite struct WorkerConfinementTests {
    @Test func aConfinedWorkerReachesNothingButItself() async throws {
        // As every program with workers is before its first one starts.
        WorkerExecution.closeThisProcessToWorkers()
        let run = try await tool(builtExecutable("filter-check"), [])
        // Its last call is on no allow-list: trapped, reported, and the process ended.
        try #require(run.status == DecoderWorker.forbiddenCallStatus, "\(run.status) \(run.errors)")
        #expect(run.output.contains("unlisted ") && !run.output.contains("unlisted-returned"), "\(run.output)")
        var results: [String: String] = [:]
        for line in run.output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2 { results[parts[0]] = parts[1] }
        }
        let eperm = "\(EPERM)"
        for denied in ["socket", "io_uring_setup", "unshare", "setns", "kill-parent", "kill-group", "tkill-self", "pidfd_open-parent",
                       "fork", "clone-newuser", "sigqueue-parent", "prlimit-parent-read", "setpriority-parent",
                       "sched_setaffinity-parent", "ioprio_set-parent", "memfd_create", "mmap-shared-anonymous"] {
            #expect(results[denied] == eperm, "\(denied): \(results[denied] ?? "not tried")")
        }
        // What decoding needs of the same calls: threads, its own limits and priority, private memory.
        for allowed in ["thread", "sigqueue-self", "prlimit-self", "setpriority-self", "mmap-private-anonymous"] {
            #expect(results[allowed] == "0", "\(allowed): \(results[allowed] ?? "not tried")")
        }
        // glibc falls back to clone for its threads.
        #expect(results["clone3"] == "\(ENOSYS)", "\(results["clone3"] ?? "")")
        // abort() signals itself.
        #expect(results["kill-self"] == "0" && results["tgkill-self"] == "0", "\(results)")
        // The parent's memory and environment: closed (it is non-dumpable; the worker holds no capability).
        #expect(results["open-parent-mem"] != "0" && results["open-parent-environ"] != "0", "\(results)")
        for limit in ["cpu", "data", "fsize", "core", "nofile"] {
            // CPU time's hard limit a few seconds past its soft one: SIGXCPU first, which names it.
            let grace = limit == "cpu" ? DecoderWorker.Limits.cpuGraceSeconds : 0
            #expect(results["limit-\(limit)"] == "\(grace)", "\(limit): hard less soft is \(results["limit-\(limit)"] ?? "?")")
            #expect(results["raise-\(limit)"] == eperm, "\(limit): raised by the worker")
        }
        for set in ["CapEff", "CapPrm", "CapBnd", "CapAmb"] {
            #expect(results[set] == "0000000000000000", "\(set): \(results[set] ?? "")")
        }
    }

    /// A confined worker is non-dumpable, whether forked (inherited from the fork server) or
    /// executed (which resets it): the kernel then shows its /proc entry as root's, closed to
    /// its same-uid siblings.
    @Test func aConfinedWorkerIsClosedToItsSiblings() async throws {
        let run = try await tool(builtExecutable("filter-check"), ["--dumpable"])
        try #require(run.status == 0, "\(run.status) \(run.errors)")
        let words = run.output.split(whereSeparator: \.isWhitespace)
        try #require(words.count == 4, "\(run.output)")
        #expect(words[3] != "0" && words[1] == "0", "/proc/self of a worker run as uid \(words[3]) is owned by uid \(words[1])")
    }

    /// With Landlock in the kernel, a worker keeps to its work directory: it writes there and
    /// reads the libraries, and neither reads nor writes a file beside it, nor /etc/passwd.
    @Test(.enabled(if: kernelLandlockABI >= 1, "this kernel has no Landlock: the work directory is not enforced"))
    func aConfinedWorkerKeepsToItsWorkDirectory() async throws {
        WorkerExecution.closeThisProcessToWorkers()
        let outside = Scratch()
        let work = outside.path + "/work"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: false)
        try Data("handed to the job".utf8).write(to: URL(fileURLWithPath: work + "/given"))
        let secret = outside.path + "/credentials"
        try Data("AKIA-not-for-decoders".utf8).write(to: URL(fileURLWithPath: secret))
        let run = try await tool(builtExecutable("filter-check"), [work, secret])
        try #require(run.status == DecoderWorker.forbiddenCallStatus, "\(run.status) \(run.errors)")
        var results: [String: String] = [:]
        for line in run.output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2 { results[parts[0]] = parts[1] }
        }
        let abi = Int(results["landlock"] ?? "") ?? -1
        #expect(results["write-work"] == "0" && results["read-work"] == "0" && results["read-usr"] == "0" && results["read-own-status"] == "0", "\(results)")
        // It makes and removes no file by name there (Landlock); `unlink` is on its allow-list.
        #expect(results["make-work"] == "\(EACCES)" && results["remove-work"] == "\(EACCES)", "\(results)")
        #expect(FileManager.default.fileExists(atPath: work + "/given") && !FileManager.default.fileExists(atPath: work + "/made-by-the-worker"))
        // The seccomp filter, Landlock or not: a file is truncated through its descriptor only.
        #expect(results["truncate-work"] == "\(EPERM)", "\(results)")
        // Nor a file's mode or ACL changed: a read-only source stays read-only.
        for denied in ["chmod-work", "fchmod-work", "fsetxattr-work"] { #expect(results[denied] == "\(EPERM)", "\(denied): \(results)") }
        #expect(abi == kernelLandlockABI, "\(results)")
        let eacces = "\(EACCES)"
        for denied in ["read-outside", "write-outside", "read-etc-passwd", "read-parent-status"] {
            #expect(results[denied] == eacces, "\(denied): \(results[denied] ?? "not tried")")
        }
        #expect(!FileManager.default.fileExists(atPath: outside.path + "/written-by-the-worker"))
        print("Landlock ABI \(abi): the worker wrote in its work directory, and was refused the file beside it and /etc/passwd")
    }
}

extension WorkerConfinementTests {
    /// A worker may always write what a converted video may be: a video limit above
    /// `decoderFileSizeLimit` raises the worker's limit with it, instead of ending every remux
    /// of a large video with SIGXFSZ. Not converting, the setting stands as it is.
    @Test func theWorkersFileSizeLimitFollowsTheVideoLimit() {
        var configuration = AttachFetchConfiguration()
        #expect(configuration.workerFileSizeLimit == 64 << 20)
        configuration.sizeLimits.video = 100 << 20
        #expect(configuration.workerFileSizeLimit == (100 << 20) + (1 << 20))
        configuration.normalize = false
        #expect(configuration.workerFileSizeLimit == 64 << 20)
    }

    /// Landlock's own refusals, apart from the filter and the network namespace that refuse the
    /// same things first in a worker: `filter-check --landlock-only` connects to a TCP server and
    /// to an abstract Unix socket of this process, and signals it, before and after the
    /// worker's ruleset. Before, each goes through (the check can tell); after, each is refused.
    static func landlockAlone() async throws -> [String: String] {
        WorkerExecution.closeThisProcessToWorkers()
        let work = Scratch()
        let name = "attach-fetch-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in for (i, byte) in name.utf8.enumerated() { path[i + 1] = byte } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + name.utf8.count)
        try #require(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } } == 0)
        try #require(listen(listener, 8) == 0)
        return try await withMediaServer { server in
            let run = try await tool(builtExecutable("filter-check"), ["--landlock-only", work.path, "\(server.port)", name])
            try #require(run.status == 0, "\(run.errors)")
            var results: [String: String] = [:]
            for line in run.output.split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                if parts.count == 2 { results[parts[0]] = parts[1] }
            }
            for control in ["tcp-before", "abstract-before", "signal-parent-before"] {
                #expect(results[control] == "0", "\(control): \(results)")
            }
            #expect(Int(results["landlock"] ?? "") == kernelLandlockABI, "\(results)")
            return results
        }
    }

    @Test(.enabled(if: kernelLandlockABI >= 4, "this kernel's Landlock (ABI below 4) has no network rights"))
    func landlockAloneRefusesTCP() async throws {
        let results = try await Self.landlockAlone()
        #expect(results["tcp"] == "\(EACCES)", "\(results)")
    }

    @Test(.enabled(if: kernelLandlockABI >= 6, "this kernel's Landlock (ABI below 6) has no scopes"))
    func landlockAloneRefusesSignalsAndAbstractSocketsOutsideTheWorker() async throws {
        let results = try await Self.landlockAlone()
        #expect(results["signal-parent"] == "\(EPERM)" && results["abstract"] == "\(EPERM)", "\(results)")
    }
}

