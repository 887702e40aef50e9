import Foundation
import Testing

/// The edges a new user meets first: the version, a usage error's usage, and a service that
/// would listen unauthenticated on more than loopback.
@Suite struct CLIEdgeTests {
    @Test func versionPrintsTheVersion() async throws {
        let run = try await CLITests.run(["--version"])
        #expect(run.status == 0 && run.stdout.hasPrefix("attach-fetch "), "\(run.status) \(run.stdout) \(run.stderr)")
        #expect(!run.stderr.contains("give at least one URL"))
    }

    /// `serve`'s configuration errors print `serve`'s usage, not the top level's.
    @Test func aServeErrorPrintsServesUsage() async throws {
        let run = try await CLITests.run(["serve", "--port", "99999"])
        #expect(run.status == 2 && run.stderr.contains("--port must be between 0 and 65535"), "\(run.stderr)")
        #expect(run.stderr.contains("Usage: attach-fetch serve") && run.stderr.contains("attach-fetch serve --help"), "\(run.stderr)")
    }

    /// Listening on every interface without `--token-file` needs `--allow-unauthenticated`,
    /// which names the risk; loopback does not.
    @Test func theServiceDoesNotListenUnauthenticatedBeyondLoopbackByAccident() async throws {
        for host in ["0.0.0.0", "::", "192.0.2.10"] {
            let run = try await CLITests.run(["serve", "--host", host, "--port", "0"])
            #expect(run.status == 2 && run.stderr.contains("--allow-unauthenticated") && run.stderr.contains("--token-file"),
                    "\(host): \(run.status) \(run.stderr)")
        }
        // Loopback, and an explicit acceptance, pass validation (checked without starting: a bad
        // port is the next error).
        for arguments in [["--host", "127.0.0.1"], ["--host", "::1"], ["--host", "localhost"],
                          ["--host", "0.0.0.0", "--allow-unauthenticated"]] {
            let run = try await CLITests.run(["serve"] + arguments + ["--port", "70000"])
            #expect(run.status == 2 && run.stderr.contains("--port") && !run.stderr.contains("without --token-file"),
                    "\(arguments): \(run.stderr)")
        }
    }
}
