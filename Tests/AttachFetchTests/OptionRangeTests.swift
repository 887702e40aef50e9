import Foundation
import Testing

/// The limits an option takes are in its help, the values the help names are taken, and a
/// secret file others can read is refused naming its mode.
@Suite struct OptionRangeTests {
    @Test func theHelpNamesEveryRangeAndTheValuesItNamesAreTaken() async throws {
        let help = try await CLITests.run(["fetch", "--help"])
        #expect(help.status == 0)
        // Help text is wrapped: compare with runs of whitespace as one space.
        let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for (option, range) in [("--breaker-failures", "1 to 1000"), ("--breaker-cooldown", "at most 3600"),
                                ("--deadline", "at most 3600"), ("--max-inflight-bytes", "to 1T"),
                                ("--thumbnail-size", "1 to 4096"), ("--transcode-max-edge", "16 to 4096")] {
            let entry = text.components(separatedBy: option).dropFirst().first ?? ""
            #expect(entry.prefix(260).contains(range), "\(option): \(entry.prefix(260))")
        }
        // 1T is what the help says is the most; a little more is refused, naming the option.
        for (value, taken) in [("1T", true), ("1t", true), ("1024G", true), ("1025G", false), ("2T", false)] {
            let run = try await CLITests.run(["--max-inflight-bytes", value, "--deadline", "1", "http://127.0.0.1:9/a.jpg"])
            if taken {
                #expect(run.status != 2, "\(value): \(run.stderr)")
            } else {
                #expect(run.status == 2 && run.stderr.contains("--max-inflight-bytes"), "\(value): \(run.stderr)")
            }
        }
        #expect(text.contains("--transcode/--no-transcode") && text.contains("--normalize/--no-normalize"), "\(text.prefix(200))")
        // Enumerated options list their values (and completion offers them); another is refused
        // with the usage status, naming the option and the values.
        #expect(text.contains("(values: attention, entropy, centre, none") && text.contains("(values: processes, none"), "\(text)")
        for (option, value) in [("--crop", "sideways"), ("--decoder-isolation", "nope")] {
            let refused = try await CLITests.run([option, value, "http://127.0.0.1:9/a.jpg"])
            #expect(refused.status == 2 && refused.stderr.contains(option) && refused.stderr.contains("'none'"), "\(option): \(refused.stderr)")
        }
        let edge = try await CLITests.run(["--transcode-max-edge", "8", "http://127.0.0.1:9/a.jpg"])
        #expect(edge.status == 2 && edge.stderr.contains("--transcode-max-edge must be from 16 to 4096"), "\(edge.stderr)")
        let failures = try await CLITests.run(["--breaker-failures", "1001", "http://127.0.0.1:9/a.jpg"])
        #expect(failures.status == 2 && failures.stderr.contains("between 1 and 1000"))
    }

    @Test func aTokenFileItsGroupOrOthersCanReadIsRefusedNamingTheMode() async throws {
        let scratch = Scratch()
        let path = "\(scratch.path)/tokens"
        try Data("secret-token-marker\n".utf8).write(to: URL(fileURLWithPath: path))
        for (mode, words) in [(0o640 as mode_t, "open to its group (mode 640)"), (0o604, "open to other users (mode 604)"),
                              (0o660, "chmod 600")] {
            chmod(path, mode)
            let run = try await CLITests.run(["serve", "--port", "0", "--token-file", path])
            #expect(run.status == 2 && run.stderr.contains(words) && run.stderr.contains(path), "\(mode): \(run.stderr)")
            #expect(!run.stderr.contains("secret-token-marker"))
        }
    }
}
