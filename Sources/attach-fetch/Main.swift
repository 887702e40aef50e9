import ArgumentParser
import AttachFetch
import Foundation

@main
struct AttachFetchTool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attach-fetch",
        abstract: "Download push-notification media, prove its type, check it against the platforms' limits and make thumbnails, within a deadline.",
        discussion: "Without a subcommand, `fetch`: attach-fetch [options] URL...",
        version: "attach-fetch \(Release.version)",
        subcommands: [FetchCommand.self, ServeCommand.self, PruneCommand.self, DecryptCommand.self],
        defaultSubcommand: FetchCommand.self
    )

    /// The subcommands a usage error can name, so that its usage is the subcommand's own.
    static let namedSubcommands: [any ParsableCommand.Type] = [ServeCommand.self, PruneCommand.self, DecryptCommand.self]

    /// swift-argument-parser exits 64 on usage errors; this tool's contract says 2.
    static func main() async {
        do {
            var command = try parseAsRoot()
            // Start-up: libvips maps every optional loader module it finds (ImageMagick, PDF,
            // OpenSlide, JPEG XL; all blocked here) at vips_init, about 50 ms. A VIPSHOME that
            // holds no modules skips that; the library then loads the one it uses (HEIF) itself.
            // Set before any library code runs; a VIPSHOME the user set is left alone.
            if getenv("VIPSHOME") == nil { setenv("VIPSHOME", "/dev/null", 0) }
            raiseOpenFileLimit()
            HeapTrimming.keepFreed(upTo: 32 << 20)
            // The fork server started now: the 80 ms it spends binding libvips' and FFmpeg's
            // symbols passes while this process sets up and downloads, and is paid once, not by
            // every worker (see DecoderReserve).
            if let fetch = command as? FetchCommand {
                DecoderReserve.start(count: fetch.pipeline.reservedDecoders)
            } else if let serve = command as? ServeCommand {
                DecoderReserve.start(count: serve.pipeline.reservedDecoders)
            }
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .validationFailure {
                // The subcommand's usage (`serve`'s for a `serve` error), not the top level's.
                let named = CommandLine.arguments.dropFirst().first
                if let subcommand = namedSubcommands.first(where: { $0.configuration.commandName == named }) {
                    let name = subcommand.configuration.commandName ?? ""
                    FileHandle.standardError.write(Data(("Error: \(message(for: error))\nUsage: \(usageString(for: subcommand))\n  See 'attach-fetch \(name) --help' for more information.\n").utf8))
                } else {
                    FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                }
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}

/// Each running transfer holds two descriptors (its socket and its body file), so the default
/// 1024 transfers need more than the usual soft limit of 1,024: the soft limit goes up to the
/// hard one, as Go's runtime does for every program. A failure leaves the limit as it was.
private func raiseOpenFileLimit() {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
}
