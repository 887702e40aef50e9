import AttachFetchCore

/// Generated JSON for the writers' tests: hostile strings, awkward numbers and any JSON value,
/// the same on every run for a seed.
public enum JSONSamples {
    /// Quotes, backslashes, slashes, every control character, DEL, accents, CJK, emoji with a
    /// modifier, the JavaScript line separators, a combining mark.
    static let pieces: [String] = ["a", "Z", "0", " ", "\"", "\\", "/", "//", "é", "日本", "👍🏽", "\u{2028}", "\u{2029}",
                                   "e\u{301}", "\u{7F}", "\u{FEFF}", "http://x/a.jpg?b=1&c=%20"]
        + (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }

    public static func string(_ random: inout SeededRandom) -> String {
        (0..<Int.random(in: 0...6, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    static let doubles: [Double] = [0, -0.0, 1, -2, 1.5, 0.1 + 0.2, 1e-7, 123_456_789.125, 1e21, 1e15, .leastNonzeroMagnitude,
                                    .greatestFiniteMagnitude, -.leastNormalMagnitude, 2.5e-3, 1 / 3]

    public static func double(_ random: inout SeededRandom) -> Double {
        Bool.random(using: &random) ? doubles.randomElement(using: &random)! : Double.random(in: -1e6...1e6, using: &random)
    }

    /// Any JSON value: keys that differ only in case, accents and emoji test the key order.
    public static func value(_ random: inout SeededRandom, depth: Int = 0) -> JSONValue {
        switch Int.random(in: depth > 3 ? 0...4 : 0...6, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return number(double(&random))
        case 3: return Bool.random(using: &random) ? .integer(Int64.random(in: .min ... .max, using: &random))
            : .unsigned(UInt64.random(in: UInt64(Int64.max) + 1 ... .max, using: &random))
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

    /// A number as `JSONValue` reads it back: integral values in range are integers.
    static func number(_ value: Double) -> JSONValue {
        value.rounded() == value && abs(value) < 9e18 ? .integer(Int64(value)) : .number(value)
    }
}
