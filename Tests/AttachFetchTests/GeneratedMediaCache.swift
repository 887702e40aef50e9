import AttachFetchCore
import Foundation

/// Media the tests make from nothing with `ffmpeg` (lavfi sources only), kept between runs in
/// the user's cache (`$ATTACH_FETCH_CACHE`, else `~/.cache/attach-fetch`, in `test-media/`),
/// named by a hash of ffmpeg's version line and the arguments with the output's name left out
/// (its extension kept: it chooses the format). Making them was 94 of the Swift tests' 106
/// `ffmpeg` CPU-seconds (docs/performance.md#the-test-suite). Each use gets a copy of its own,
/// so a test may change it. `ATTACH_FETCH_TEST_MEDIA_CACHE=0` makes every file afresh.
/// A file no run has used for `unusedLifetime` is removed, so media of tests since changed does
/// not pile up.
enum GeneratedMediaCache {
    static let unusedLifetime: TimeInterval = 30 * 86_400

    static let directory: String? = {
        let environment = ProcessInfo.processInfo.environment
        guard environment["ATTACH_FETCH_TEST_MEDIA_CACHE"] != "0" else { return nil }
        let base = environment["ATTACH_FETCH_CACHE"]
            ?? (environment["XDG_CACHE_HOME"] ?? NSHomeDirectory() + "/.cache") + "/attach-fetch"
        let directory = base + "/test-media"
        let files = FileManager.default
        guard (try? files.createDirectory(atPath: directory, withIntermediateDirectories: true)) != nil else { return nil }
        // Each use renews a file's modification time (`ffmpeg`).
        for name in (try? files.contentsOfDirectory(atPath: directory)) ?? [] {
            let path = "\(directory)/\(name)"
            if let used = (try? files.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
               used.timeIntervalSinceNow < -unusedLifetime { try? files.removeItem(atPath: path) }
        }
        return directory
    }()

    /// ffmpeg's first `-version` line: a new ffmpeg makes its media afresh.
    static let ffmpegVersion: String? = {
        guard let made = try? runTool("/usr/bin/ffmpeg", ["-version"]), made.status == 0 else { return nil }
        return made.output.split(separator: "\n").first.map(String.init)
    }()

    /// The cache's file for `arguments` and the output they name; nil when they read anything
    /// but lavfi sources, or write anywhere but one file named last.
    static func entry(_ arguments: [String]) -> (file: String, output: String)? {
        guard let directory, let version = ffmpegVersion, let output = arguments.last, output.hasPrefix("/"),
              case let format = (output as NSString).pathExtension, !format.isEmpty else { return nil }
        for (index, argument) in arguments.dropLast().enumerated() {
            if argument.hasPrefix("/") { return nil }
            if argument == "-i", index < 2 || arguments[index - 2] != "-f" || arguments[index - 1] != "lavfi" { return nil }
        }
        let text = ([version] + arguments.dropLast() + ["output." + format]).joined(separator: "\u{0}")
        guard let hash = try? SHA256Digest.hex(of: Array(text.utf8)) else { return nil }
        return ("\(directory)/\(hash).\(format)", output)
    }

    /// Runs `ffmpeg arguments`, or copies what an earlier run made with them; nil when they
    /// are not for the cache (`entry`).
    static func ffmpeg(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String)? {
        guard let (file, output) = entry(arguments) else { return nil }
        let files = FileManager.default
        if files.fileExists(atPath: file) {
            try? files.removeItem(atPath: output)
            // A file another test process has just removed as unused is made again below.
            if (try? files.copyItem(atPath: file, toPath: output)) != nil {
                try? files.setAttributes([.modificationDate: Date()], ofItemAtPath: file)
                return (0, "", "")
            }
        }
        let made = try runTool("/usr/bin/ffmpeg", arguments)
        // Into the cache under a name of its own, then renamed: a test making the same file at
        // the same time, or a run stopped midway, never leaves half of one there.
        if made.status == 0 {
            let partial = "\(file).\(getpid()).\(UUID().uuidString).part"
            if (try? files.copyItem(atPath: output, toPath: partial)) != nil, rename(partial, file) != 0 { try? files.removeItem(atPath: partial) }
        }
        return made
    }
}
