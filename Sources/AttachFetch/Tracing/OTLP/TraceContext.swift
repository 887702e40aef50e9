internal import Tracing

/// One span's identity as W3C Trace Context carries it (`traceparent`, `tracestate`): what a
/// caller's header says, and what the service's answer and exported spans say.
package struct TraceContext: Sendable, Hashable {
    package var traceID: [UInt8]
    package var spanID: [UInt8]
    package var sampled: Bool
    package var traceState: String?

    /// `traceparent` of version 00: `00-<32 hex>-<16 hex>-<2 hex>`.
    package var traceparent: String {
        "00-\(Self.hex(traceID))-\(Self.hex(spanID))-\(sampled ? "01" : "00")"
    }

    package var traceIDHex: String { Self.hex(traceID) }
    package var spanIDHex: String { Self.hex(spanID) }

    /// The header's context, or nil when it breaks the specification's rules (then the
    /// service starts a trace of its own, as the specification says).
    package init?(traceparent: String, tracestate: String? = nil) {
        let fields = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard fields.count >= 4, let version = Self.bytes(fields[0]), version.count == 1, version[0] != 0xff,
              let trace = Self.bytes(fields[1]), trace.count == 16, trace.contains(where: { $0 != 0 }),
              let span = Self.bytes(fields[2]), span.count == 8, span.contains(where: { $0 != 0 }),
              let flags = Self.bytes(fields[3]), flags.count == 1,
              // Version 00 has exactly four fields; a later version may add more.
              version[0] != 0 || fields.count == 4 else { return nil }
        traceID = trace
        spanID = span
        sampled = flags[0] & 1 == 1
        // At most 512 characters are kept (the specification's propagation limit).
        traceState = tracestate.flatMap { $0.isEmpty || $0.utf8.count > 512 ? nil : $0 }
    }

    package init(traceID: [UInt8], spanID: [UInt8], sampled: Bool, traceState: String? = nil) {
        (self.traceID, self.spanID, self.sampled, self.traceState) = (traceID, spanID, sampled, traceState)
    }

    /// New random identifiers of 8 or 16 bytes: never all zero.
    static func randomID(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        while true {
            var id: [UInt8] = []
            id.reserveCapacity(count)
            for _ in 0..<(count / 8) {
                let word = generator.next()
                for shift in stride(from: 56, through: 0, by: -8) { id.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
            }
            if id.contains(where: { $0 != 0 }) { return id }
        }
    }

    static func hex(_ bytes: [UInt8]) -> String { TextFormat.hex(bytes) }

    /// Lower-case hex digits only (the specification refuses upper case), two per byte.
    private static func bytes(_ text: Substring) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty, utf8.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        for index in stride(from: 0, to: utf8.count, by: 2) {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }
}

/// Where a `ServiceContext` holds the current span's `TraceContext`.
package enum TraceContextKey: ServiceContextKey {
    package typealias Value = TraceContext
    package static let nameOverride: String? = "traceparent"
}
