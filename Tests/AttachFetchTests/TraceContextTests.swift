@testable import AttachFetch
import Testing

/// W3C Trace Context parsing and OpenTelemetry's samplers, without a socket.
@Suite struct TraceContextTests {
    @Test func aValidTraceparentIsReadAndWrittenBackTheSame() throws {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let context = try #require(TraceContext(traceparent: header, tracestate: "congo=t61rcWkgMzE"))
        #expect(context.traceparent == header && context.sampled && context.traceState == "congo=t61rcWkgMzE")
        #expect(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled == false)
        // A later version may carry more fields; they are ignored.
        #expect(TraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra") != nil)
    }

    @Test func aTraceparentThatBreaksTheRulesIsIgnored() {
        for header in ["", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // upper case
                       "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
                       "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero span id
                       "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version ff
                       "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", // version 00 has four fields
                       "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"] {
            #expect(TraceContext(traceparent: header) == nil, "\(header)")
        }
        #expect(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                             tracestate: String(repeating: "a", count: 513))?.traceState == nil, "an over-long tracestate is dropped")
    }

    @Test func samplersFollowTheSpecification() throws {
        let parentOn = TraceContext(traceID: TraceContext.randomID(16), spanID: TraceContext.randomID(8), sampled: true)
        let parentOff = TraceContext(traceID: TraceContext.randomID(16), spanID: TraceContext.randomID(8), sampled: false)
        let standard = try TraceSampler(name: nil, argument: nil)
        #expect(standard == .parentBased(root: .alwaysOn))
        #expect(standard.samples(traceID: parentOn.traceID, parent: parentOn) && !standard.samples(traceID: parentOff.traceID, parent: parentOff))
        #expect(standard.samples(traceID: TraceContext.randomID(16), parent: nil))
        let half = try TraceSampler(name: "traceidratio", argument: "0.5")
        let ids = (0..<4000).map { _ in TraceContext.randomID(16) }
        let sampled = ids.filter { half.samples(traceID: $0, parent: nil) }.count
        #expect((1700...2300).contains(sampled), "\(sampled) of 4000 at 0.5")
        #expect(ids.allSatisfy { half.samples(traceID: $0, parent: nil) == half.samples(traceID: $0, parent: parentOff) }, "not parent-based")
        #expect(try TraceSampler(name: "always_off", argument: nil).samples(traceID: ids[0], parent: parentOn) == false)
        #expect(throws: TraceSettingsError.self) { try TraceSampler(name: "traceidratio", argument: "1.5") }
    }

    @Test func settingsComeFromTheEnvironmentOrNotAtAll() throws {
        #expect(try TraceSettings.fromEnvironment([:]) == nil)
        #expect(try TraceSettings.fromEnvironment(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"]) == nil)
        let base = try #require(try TraceSettings.fromEnvironment(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/",
                                                                    "OTEL_RESOURCE_ATTRIBUTES": "service.name=from-resource,team=push%20ops"]))
        #expect(base.endpoint == "http://c:4318/v1/traces")
        #expect(base.resource.map(\.0) == ["service.name", "team"] && base.resource[0].1 == "from-resource" && base.resource[1].1 == "push ops")
        let traces = try #require(try TraceSettings.fromEnvironment(["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c/x",
                                                                      "OTEL_EXPORTER_OTLP_ENDPOINT": "http://ignored",
                                                                      "OTEL_SERVICE_NAME": "named", "OTEL_EXPORTER_OTLP_HEADERS": "a=b%3Dc"]))
        #expect(traces.endpoint == "https://c/x" && traces.resource[0].1 == "named" && traces.headers == ["a: b=c"])
    }
}
