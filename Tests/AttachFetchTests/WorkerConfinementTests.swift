import Foundation
import Testing
@testable import AttachFetch

/// What a decoder taken over can do once confined (docs/security.md, "What a compromised
/// decoder can do"): `filter-check` confines itself exactly as a worker does, then tries each
/// thing and reports its errno.
@Suite struct WorkerConfinementTests {
    @Test func aConfinedWorkerReachesNothingButItself() async throws {
        // As every program with workers is before its first one starts.
        WorkerExecution.closeThisProcessToWorkers()
        let run = try await tool(builtExecutable("filter-check"), [])
        try #require(run.status == 0, "\(run.errors)")
        var results: [String: String] = [:]
        for line in run.output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2 { results[parts[0]] = parts[1] }
        }
        let eperm = "\(EPERM)"
        for denied in ["socket", "io_uring_setup", "unshare", "setns", "kill-parent", "tkill-self", "pidfd_open-parent"] {
            #expect(results[denied] == eperm, "\(denied): \(results[denied] ?? "not tried")")
        }
        // glibc falls back to clone for its threads.
        #expect(results["clone3"] == "\(ENOSYS)", "\(results["clone3"] ?? "")")
        // abort() signals itself.
        #expect(results["kill-self"] == "0" && results["tgkill-self"] == "0", "\(results)")
        // The parent's memory and environment: closed (it is non-dumpable; the worker holds no capability).
        #expect(results["open-parent-mem"] != "0" && results["open-parent-environ"] != "0", "\(results)")
        for limit in ["cpu", "data", "fsize", "core"] {
            #expect(results["limit-\(limit)"] == "equal", "\(limit): soft and hard differ")
            #expect(results["raise-\(limit)"] == eperm, "\(limit): raised by the worker")
        }
        for set in ["CapEff", "CapPrm", "CapBnd", "CapAmb"] {
            #expect(results[set] == "0000000000000000", "\(set): \(results[set] ?? "")")
        }
    }

    /// With Landlock in the kernel, a worker keeps to its work directory: it writes there and
    /// reads the libraries, and neither reads nor writes a file beside it, nor /etc/passwd.
    @Test func aConfinedWorkerKeepsToItsWorkDirectory() async throws {
        WorkerExecution.closeThisProcessToWorkers()
        let outside = Scratch()
        let work = outside.path + "/work"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: false)
        let secret = outside.path + "/credentials"
        try Data("AKIA-not-for-decoders".utf8).write(to: URL(fileURLWithPath: secret))
        let run = try await tool(builtExecutable("filter-check"), [work, secret])
        try #require(run.status == 0, "\(run.errors)")
        var results: [String: String] = [:]
        for line in run.output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2 { results[parts[0]] = parts[1] }
        }
        let abi = Int(results["landlock"] ?? "") ?? -1
        #expect(results["write-work"] == "0" && results["read-usr"] == "0" && results["read-own-status"] == "0", "\(results)")
        guard abi >= 1 else {
            print("no Landlock in this kernel (\(results["landlock"] ?? "?")): the work directory is not enforced")
            return
        }
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
}
