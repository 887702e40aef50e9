import AttachFetchCore
import Foundation
import TestHelpers
import Testing

/// `JSONWriter` on plain values and `JSONValue` (a payload carried into a document): keys
/// sorted, slashes unescaped, what JSON cannot carry refused with the reason, and any value
/// read back as it was written. The documents themselves are the service's `JSONWriterTests`.
@Suite struct JSONValueTests {
    @Test func keysAreSortedAndSlashesAreNotEscaped() throws {
        #expect(try JSONWriter.string(WrittenTwice()) == #"{"a":2,"b":{"c":[1,{}]},"z":"last"}"#)
        #expect(try JSONWriter.string(["url": "https://cdn.example/a/b.jpg"]) == #"{"url":"https://cdn.example/a/b.jpg"}"#)
        let pretty = try JSONWriter.string(["b": 1, "a": 2], layout: .pretty)
        #expect(pretty.contains("\n") && pretty.firstRange(of: "\"a\"")!.lowerBound < pretty.firstRange(of: "\"b\"")!.lowerBound)
    }

    @Test func aValueThatCannotBeWrittenThrowsAndSaysWhy() {
        #expect(throws: JSONWriter.Failure.self) { try JSONWriter.string([Double.nan]) }
        do {
            _ = try JSONWriter.string(["a": Double.infinity])
            Issue.record("infinity was written")
        } catch {
            #expect(error.description.contains("Dictionary<String, Double>"), "\(error)")
        }
    }

    @Test func anyJSONValueReadsBackAsItWas() throws {
        var random = SeededRandom(state: 15)
        for _ in 0..<500 {
            let value = JSONSamples.value(&random)
            #expect(try JSONValue(json: JSONWriter.data(value)) == value)
        }
        for text in ["0", "-0", "1.5", "9223372036854775807", "-9223372036854775808", "18446744073709551615",
                     "1e300", "true", "false", "null", #""é/\u2028""#, "[]", "{}"] {
            let value = try JSONValue(json: Data(text.utf8))
            #expect(try JSONValue(json: JSONWriter.data(value)) == value, "\(text)")
        }
        #expect(try JSONValue(json: Data("1".utf8)) == .integer(1) && JSONValue(json: Data("true".utf8)) == .bool(true),
                "a number is not a boolean")
        #expect(throws: (any Error).self) { try JSONValue(json: Data("{".utf8)) }
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
