internal import EncryptedContent

/// Numbers as text, and text trimmed, for the layers the decoder links: they import
/// FoundationEssentials, not Foundation (whose libraries and ICU would add 20,000 symbol
/// relocations to every start of the decoder's fork server), and FoundationEssentials has
/// neither `String(format:)` nor `trimmingCharacters(in:)`.
package enum TextFormat {
    /// `text` without the whitespace (newlines included) at either end.
    package static func trimmed<Text: StringProtocol>(_ text: Text) -> Text.SubSequence {
        let start = text.firstIndex { !$0.isWhitespace } ?? text.endIndex
        let end = text[start...].lastIndex { !$0.isWhitespace }.map(text.index(after:)) ?? start
        return text[start..<end]
    }

    /// Lower-case hex, two digits a byte.
    package static func hex(_ bytes: some Sequence<UInt8>) -> String { Hex.lowercase(bytes) }

    /// `value` with `digits` decimals, rounded half away from zero (`%.2f` for `digits` 2).
    package static func fixed(_ value: Double, digits: Int) -> String {
        guard value.isFinite, abs(value) < 1e15 else { return String(describing: value) }
        var scale = 1
        for _ in 0..<digits { scale *= 10 }
        let units = Int((abs(value) * Double(scale)).rounded())
        let sign = value < 0 && units > 0 ? "-" : ""
        guard digits > 0 else { return sign + String(units) }
        let fraction = String(units % scale)
        return sign + String(units / scale) + "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
}
