import Foundation
internal import Tracing

/// OTLP/HTTP's JSON encoding of an export request (opentelemetry-proto's
/// `ExportTraceServiceRequest`): ids as lower-case hex, 64-bit numbers as strings, enums as
/// numbers, as the specification's JSON mapping says. Encoded by `JSONEncoder`.
enum OTLPJSON {
    struct Request: Encodable { var resourceSpans: [ResourceSpans] }
    struct ResourceSpans: Encodable {
        var resource: Resource
        var scopeSpans: [ScopeSpans]
    }
    struct Resource: Encodable { var attributes: [KeyValue] }
    struct ScopeSpans: Encodable {
        var scope: Scope
        var spans: [SpanJSON]
    }
    struct Scope: Encodable {
        var name: String
        var version: String
    }
    struct SpanJSON: Encodable {
        var traceId: String
        var spanId: String
        var parentSpanId: String?
        var traceState: String?
        var name: String
        var kind: Int
        var startTimeUnixNano: String
        var endTimeUnixNano: String
        var attributes: [KeyValue]
        var events: [Event]
        var links: [Link]
        var status: Status?
    }
    struct Event: Encodable {
        var timeUnixNano: String
        var name: String
        var attributes: [KeyValue]
    }
    struct Link: Encodable {
        var traceId: String
        var spanId: String
        var attributes: [KeyValue]
    }
    struct Status: Encodable {
        var code: Int
        var message: String?
    }
    struct KeyValue: Encodable {
        var key: String
        var value: AnyValue
    }
    struct AnyValue: Encodable {
        var stringValue: String?
        var boolValue: Bool?
        var intValue: String?
        var doubleValue: Double?
        var arrayValue: ArrayValue?
    }
    struct ArrayValue: Encodable { var values: [AnyValue] }

    /// The body for `spans`, under `resource`.
    static func encode(_ spans: [FinishedSpan], resource: [(String, String)], scopeVersion: String) throws -> Data {
        let request = Request(resourceSpans: [ResourceSpans(
            resource: Resource(attributes: resource.map { KeyValue(key: $0.0, value: AnyValue(stringValue: $0.1)) }),
            scopeSpans: [ScopeSpans(scope: Scope(name: "attach-fetch", version: scopeVersion), spans: spans.map(span))])])
        return try JSONEncoder().encode(request)
    }

    static func span(_ span: FinishedSpan) -> SpanJSON {
        SpanJSON(traceId: span.trace.traceIDHex, spanId: span.trace.spanIDHex,
                 parentSpanId: span.parentSpanID.map(TraceContext.hex), traceState: span.trace.traceState,
                 name: span.name, kind: kind(span.kind),
                 startTimeUnixNano: String(span.startNanos), endTimeUnixNano: String(span.endNanos),
                 attributes: attributes(span.attributes),
                 events: span.events.map { Event(timeUnixNano: String($0.nanosecondsSinceEpoch), name: $0.name, attributes: attributes($0.attributes)) },
                 links: span.links.map { Link(traceId: $0.0.traceIDHex, spanId: $0.0.spanIDHex, attributes: attributes($0.1)) },
                 status: span.status.map { Status(code: $0.code == .ok ? 1 : 2, message: $0.message) })
    }

    /// SPAN_KIND_INTERNAL 1, SERVER 2, CLIENT 3, PRODUCER 4, CONSUMER 5.
    static func kind(_ kind: SpanKind) -> Int {
        switch kind {
        case .server: return 2
        case .client: return 3
        case .producer: return 4
        case .consumer: return 5
        default: return 1
        }
    }

    static func attributes(_ attributes: SpanAttributes) -> [KeyValue] {
        var out: [KeyValue] = []
        attributes.forEach { key, attribute in
            if let value = value(attribute) { out.append(KeyValue(key: key, value: value)) }
        }
        return out.sorted { $0.key < $1.key }
    }

    static func value(_ attribute: SpanAttribute) -> AnyValue? {
        switch attribute {
        case .int32(let value): return AnyValue(intValue: String(value))
        case .int64(let value): return AnyValue(intValue: String(value))
        case .double(let value): return AnyValue(doubleValue: value)
        case .bool(let value): return AnyValue(boolValue: value)
        case .string(let value): return AnyValue(stringValue: value)
        case .stringConvertible(let value): return AnyValue(stringValue: String(describing: value))
        case .int32Array(let values): return AnyValue(arrayValue: ArrayValue(values: values.map { AnyValue(intValue: String($0)) }))
        case .int64Array(let values): return AnyValue(arrayValue: ArrayValue(values: values.map { AnyValue(intValue: String($0)) }))
        case .doubleArray(let values): return AnyValue(arrayValue: ArrayValue(values: values.map { AnyValue(doubleValue: $0) }))
        case .boolArray(let values): return AnyValue(arrayValue: ArrayValue(values: values.map { AnyValue(boolValue: $0) }))
        case .stringArray(let values): return AnyValue(arrayValue: ArrayValue(values: values.map { AnyValue(stringValue: $0) }))
        case .stringConvertibleArray(let values):
            return AnyValue(arrayValue: ArrayValue(values: values.map { AnyValue(stringValue: String(describing: $0)) }))
        default: return nil
        }
    }
}
