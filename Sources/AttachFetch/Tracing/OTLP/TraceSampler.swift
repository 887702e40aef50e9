/// OpenTelemetry's samplers, as `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name them.
/// The default, `parentbased_always_on`, follows the caller's `sampled` flag and samples roots.
package enum TraceSampler: Sendable, Equatable {
    case alwaysOn, alwaysOff
    /// A share of traces, by trace id (the same for every service in the trace).
    case ratio(Double)
    /// The parent's decision when there is a parent; `root` for a trace that starts here.
    indirect case parentBased(root: TraceSampler)

    /// The variable's value and argument, or an error naming what it takes.
    package init(name: String?, argument: String?) throws(TraceSettingsError) {
        func ratio() throws(TraceSettingsError) -> Double {
            guard let argument else { return 1 }
            guard let value = Double(argument), (0...1).contains(value) else {
                throw TraceSettingsError("OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, not '\(argument)'")
            }
            return value
        }
        switch name?.lowercased() ?? "parentbased_always_on" {
        case "always_on": self = .alwaysOn
        case "always_off": self = .alwaysOff
        case "traceidratio": self = .ratio(try ratio())
        case "parentbased_always_on": self = .parentBased(root: .alwaysOn)
        case "parentbased_always_off": self = .parentBased(root: .alwaysOff)
        case "parentbased_traceidratio": self = .parentBased(root: .ratio(try ratio()))
        case let other:
            throw TraceSettingsError("OTEL_TRACES_SAMPLER '\(other)' is not one attach-fetch knows (always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio)")
        }
    }

    /// Whether a new span of `traceID` under `parent` is sampled.
    func samples(traceID: [UInt8], parent: TraceContext?) -> Bool {
        switch self {
        case .alwaysOn: return true
        case .alwaysOff: return false
        case .ratio(let share):
            // The trace id's last 8 bytes as a number, against the share of 2^64 (as the
            // specification's TraceIdRatioBased does).
            let low = traceID.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return Double(low) < share * 18_446_744_073_709_551_616.0
        case .parentBased(let root):
            if let parent { return parent.sampled }
            return root.samples(traceID: traceID, parent: nil)
        }
    }
}

/// A trace setting from the environment that cannot be used; the message names it.
package struct TraceSettingsError: Error, CustomStringConvertible, Sendable {
    package let description: String
    init(_ description: String) { self.description = description }
}
