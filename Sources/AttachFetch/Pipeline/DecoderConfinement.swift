/// How a pipeline's decoders are confined: what the keeper requires of each worker before its
/// first job (`ConfinementCheck`), for `/readyz`, the metrics and `--verbose`.
public struct DecoderConfinement: Sendable, Equatable, Codable {
    /// `processes` (confined worker processes) or `none` (in the pipeline's process, unconfined).
    public var isolation: String
    /// Whether each worker must have its seccomp filter (false without workers, and in a build
    /// with AddressSanitizer, which runs under no filter).
    public var systemCallFilter: Bool
    /// The Landlock ABI each worker's ruleset is checked against; 0: none (no workers, or a
    /// kernel without Landlock where `decoderRunsWithoutLandlock` allows that).
    public var landlockABI: Int

    /// In words, for logs: "worker processes, seccomp filter, Landlock ABI 7".
    public var summary: String {
        guard isolation == "processes" else { return "in this process, unconfined" }
        return ["worker processes", systemCallFilter ? "seccomp filter" : "no seccomp filter",
                landlockABI > 0 ? "Landlock ABI \(landlockABI)" : "no Landlock"].joined(separator: ", ")
    }
}

extension DecoderConfinement {
    /// What the keeper requires of workers started by `launch` (nil: no workers): the kernel's
    /// Landlock ABI as the launch takes it, where the workers have a directory to keep to.
    init(_ launch: DecoderProcess.Launch?) {
        guard let launch else {
            self.init(isolation: "none", systemCallFilter: false, landlockABI: 0)
            return
        }
        self.init(isolation: "processes", systemCallFilter: !ConfinementCheck.builtWithAddressSanitizer,
                  landlockABI: launch.workDirectory == nil ? 0 : Int(launch.kernelLandlockABI))
    }
}
