@testable import AttachFetch
@testable import AttachFetchService
import Foundation
import Testing

/// `SortedJSON` writes the service's and the CLI's compact JSON; it must write exactly the bytes
/// `JSONEncoder` writes with `[.sortedKeys, .withoutEscapingSlashes]` (the contract's documents
/// were written by that encoder until it was replaced). Every document type, with every optional
/// field present or absent, hostile strings and awkward numbers, is encoded by both and compared.
@Suite struct SortedJSONTests {
    private static func foundation<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private static func expectSame<T: Encodable>(_ value: T, _ sourceLocation: SourceLocation = #_sourceLocation) throws {
        let expected = try foundation(value)
        let written = try SortedJSON.encode(value)
        #expect(written == expected, sourceLocation: sourceLocation)
    }

    /// SplitMix64: the same documents on every run.
    private struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Quotes, backslashes, slashes, every control character, DEL, accents, CJK, emoji with a
    /// modifier, the JavaScript line separators, a combining mark.
    private static let pieces: [String] = ["a", "Z", "0", " ", "\"", "\\", "/", "//", "é", "日本", "👍🏽", "\u{2028}", "\u{2029}",
                                           "e\u{301}", "\u{7F}", "\u{FEFF}", "http://x/a.jpg?b=1&c=%20"]
        + (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }

    private static func string(_ random: inout Seeded) -> String {
        (0..<Int.random(in: 0...6, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    private static let doubles: [Double] = [0, -0.0, 1, -2, 1.5, 0.1 + 0.2, 1e-7, 123_456_789.125, 1e21, 1e15, 5e-324,
                                            .greatestFiniteMagnitude, -.leastNormalMagnitude, 2.5e-3, 1 / 3]

    private static func double(_ random: inout Seeded) -> Double {
        Bool.random(using: &random) ? doubles.randomElement(using: &random)! : Double.random(in: -1e6...1e6, using: &random)
    }

    private static func maybe<T>(_ random: inout Seeded, _ make: (inout Seeded) -> T) -> T? {
        Bool.random(using: &random) ? make(&random) : nil
    }

    private static func reason(_ random: inout Seeded) -> AttachmentDescriptor.Reason {
        .init(code: ReasonCode.allKnown.randomElement(using: &random)!, message: string(&random))
    }

    private static func descriptor(_ random: inout Seeded) -> AttachmentDescriptor {
        let int: (inout Seeded) -> Int = { Int.random(in: -5...Int.max, using: &$0) }
        let bytes: (inout Seeded) -> Int64 = { Int64.random(in: 0...Int64.max, using: &$0) }
        var d = AttachmentDescriptor(identifier: string(&random), url: string(&random),
                                     status: [.ready, .failed, .rejected, .timedOut].randomElement(using: &random)!,
                                     reason: maybe(&random, reason),
                                     timings: .init(total: int(&random), connect: maybe(&random, int), firstByte: maybe(&random, int),
                                                    download: maybe(&random, int), thumbnail: maybe(&random, int),
                                                    normalize: maybe(&random, int), probe: maybe(&random, int),
                                                    variants: maybe(&random, int)))
        d.timings.queued = maybe(&random, int)
        d.finalUrl = maybe(&random, string)
        d.file = maybe(&random, string)
        d.mimeType = maybe(&random, string)
        d.declaredMimeType = maybe(&random, string)
        d.kind = maybe(&random) { [.image, .audio, .video].randomElement(using: &$0)! }
        d.uti = maybe(&random, string)
        d.fileExtension = maybe(&random, string)
        d.bytes = maybe(&random, bytes)
        d.sha256 = maybe(&random, string)
        d.width = maybe(&random, int)
        d.height = maybe(&random, int)
        d.thumbnail = maybe(&random) {
            .init(file: string(&$0), width: int(&$0), height: int(&$0), time: maybe(&$0, double), publishedUrl: maybe(&$0, string))
        }
        d.role = maybe(&random) { [.attachment, .avatar].randomElement(using: &$0)! }
        d.options = maybe(&random) { random in
            .init(clippingRect: maybe(&random) { r in
                      .init(x: Double.random(in: 0...0.5, using: &r), y: Double.random(in: 0...0.5, using: &r),
                            width: Double.random(in: 0.01...0.5, using: &r), height: 0.25)
                  },
                  thumbnailTime: maybe(&random, double), thumbnailHidden: maybe(&random) { Bool.random(using: &$0) })
        }
        d.payloadPath = maybe(&random, string)
        d.sourceMimeType = maybe(&random, string)
        d.sourceBytes = maybe(&random, bytes)
        d.sourceWidth = maybe(&random, int)
        d.sourceHeight = maybe(&random, int)
        let transforms: (inout Seeded) -> [AttachmentDescriptor.Transform] = { random in
            (0..<Int.random(in: 0...3, using: &random)).map { _ in
                [.transcoded, .downscaled, .reencoded, .remuxed].randomElement(using: &random)!
            }
        }
        d.transforms = maybe(&random, transforms)
        d.duration = maybe(&random, double)
        d.videoCodec = maybe(&random, string)
        d.audioCodec = maybe(&random, string)
        d.ats = maybe(&random) { random in
            .init(problems: (0..<Int.random(in: 0...2, using: &random)).map { _ in .init(code: string(&random), message: string(&random)) })
        }
        d.cache = maybe(&random) { [.miss, .hit, .revalidated, .coalesced].randomElement(using: &$0)! }
        d.publishedUrl = maybe(&random, string)
        d.variants = maybe(&random) { random in
            var variants: [String: AttachmentDescriptor.Variant] = [:]
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                var variant = AttachmentDescriptor.Variant(status: maybe(&random) { [.unsupported, .failed].randomElement(using: &$0)! },
                                                           reason: maybe(&random, reason))
                variant.file = maybe(&random, string)
                variant.bytes = maybe(&random, bytes)
                variant.sha256 = maybe(&random, string)
                variant.mimeType = maybe(&random, string)
                variant.width = maybe(&random, int)
                variant.height = maybe(&random, int)
                variant.transforms = maybe(&random, transforms)
                variant.publishedUrl = maybe(&random, string)
                variants[string(&random)] = variant
            }
            return variants
        }
        return d
    }

    /// Any JSON value: keys that differ only in case, accents and emoji test the key order.
    private static func value(_ random: inout Seeded, depth: Int = 0) -> JSONValue {
        switch Int.random(in: depth > 3 ? 0...4 : 0...6, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .number(double(&random))
        case 3: return .number(Double(Int.random(in: -1000...1000, using: &random)))
        case 4: return .string(string(&random))
        case 5: return .array((0..<Int.random(in: 0...4, using: &random)).map { _ in value(&random, depth: depth + 1) })
        default:
            var object: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &random) {
                object[["a", "A", "b", "B", "é", "e", "_", "👍🏽", "aa", ""].randomElement(using: &random)! + string(&random)] =
                    value(&random, depth: depth + 1)
            }
            return .object(object)
        }
    }

    @Test func descriptorsAndBatchDocumentsAreWrittenAsJSONEncoderWritesThem() throws {
        var random = Seeded(state: 14)
        for _ in 0..<400 {
            let descriptors = (0..<Int.random(in: 0...3, using: &random)).map { _ in Self.descriptor(&random) }
            for descriptor in descriptors { try Self.expectSame(descriptor) }
            let batch = AttachmentBatch(attachments: descriptors, elapsed: .milliseconds(Int.random(in: 0...99_999, using: &random)),
                                        deadline: .seconds(25), directory: Self.maybe(&random, Self.string))
            let lint = Self.maybe(&random) { random in
                (0..<Int.random(in: 0...2, using: &random)).map { _ in
                    PayloadLintFinding(code: Self.string(&random), severity: Bool.random(using: &random) ? .error : .warning,
                                       message: Self.string(&random), path: Self.string(&random))
                }
            }
            try Self.expectSame(BatchDocument(batch, lint: lint))
            try Self.expectSame(BatchDocument(batch, lint: lint ?? []))
        }
    }

    @Test func serviceLinesAndValuesAreWrittenAsJSONEncoderWritesThem() throws {
        var random = Seeded(state: 15)
        for _ in 0..<300 {
            var counts: [String: Int] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &random) { counts[Self.string(&random)] = Int.random(in: 0...99, using: &random) }
            try Self.expectSame(StreamSummary(done: true, elapsedMs: Int.random(in: 0...9999, using: &random), deadlineMs: 25_000,
                                              directory: Self.string(&random), attachments: 3, byStatus: counts))
            try Self.expectSame(["error": ["code": Self.string(&random), "message": Self.string(&random)]])
            try Self.expectSame(Self.value(&random))
            try Self.expectSame([Self.double(&random), Self.double(&random)])
            try Self.expectSame(Self.string(&random))
        }
        // Every other scalar type, keyed, unkeyed and alone; Float's own shortest form.
        try Self.expectSame(Scalars())
        try Self.expectSame([Scalars(), Scalars()])
        try Self.expectSame(Float(0.1))
        try Self.expectSame(UInt64.max)
        try Self.expectSame([Int8.min])
    }

    @Test func nonFiniteNumbersThrowAndWrittenTwiceKeepsTheLastValue() throws {
        #expect(throws: SortedJSON.NonFiniteNumber.self) { try SortedJSON.encode([Double.nan]) }
        #expect(throws: SortedJSON.NonFiniteNumber.self) { try SortedJSON.encode(["a": Double.infinity]) }
        #expect(throws: (any Error).self) { try Self.foundation([Double.nan]) }
        try Self.expectSame(WrittenTwice())
        #expect(try SortedJSON.encode(WrittenTwice()) == #"{"a":2,"b":{"c":[1,{}]},"z":"last"}"#)
    }

    private struct Scalars: Encodable {
        var bool = false, float = Float(1.25), i8 = Int8.min, i16 = Int16.max, i32 = Int32.min, i64 = Int64.min
        var u = UInt.max, u8 = UInt8.max, u16 = UInt16.max, u32 = UInt32.max, u64 = UInt64.max
        var none: String? = nil
        var nested = ["x": [Int?.none, 1]]
    }

    /// A hand-written conformance: a key written twice, nested containers, an empty object.
    private struct WrittenTwice: Encodable {
        enum Keys: String, CodingKey { case z, a, b, c }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode("first", forKey: .z)
            try container.encode(1, forKey: .a)
            var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .b)
            var list = nested.nestedUnkeyedContainer(forKey: .c)
            try list.encode(1)
            _ = list.nestedContainer(keyedBy: Keys.self)
            var again = encoder.container(keyedBy: Keys.self)
            try again.encode(2, forKey: .a)
            try again.encode("last", forKey: .z)
        }
    }
}

/// Any JSON value, for writing random documents.
private indirect enum JSONValue: Encodable {
    case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 { try container.encode(Int64(value)) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
