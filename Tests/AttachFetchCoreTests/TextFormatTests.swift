import Testing
@testable import AttachFetchCore

/// Numbers as text without Foundation's `String(format:)`, as the decoder's messages write them.
@Suite struct TextFormatTests {
    @Test(arguments: [(3.14159, 2, "3.14"), (-3.14159, 2, "-3.14"), (100.5, 2, "100.50"), (0.001, 2, "0.00"),
                      (-0.001, 2, "0.00"), (7, 0, "7"), (59.996, 2, "60.00"), (0.25, 1, "0.3"), (3605.0, 1, "3605.0")])
    func fixedDecimalsAreWhatPrintfWouldWrite(value: Double, digits: Int, text: String) {
        #expect(TextFormat.fixed(value, digits: digits) == text)
    }

    @Test(arguments: [("  ios , ", "ios ,"), ("\tlibx264 refused\n", "libx264 refused"), ("a b", "a b"), (" \n ", ""), ("", "")])
    func trimmingTakesWhitespaceAndNewlinesOffBothEnds(text: String, trimmed: String) {
        #expect(TextFormat.trimmed(text) == trimmed)
    }

    @Test func hexIsTwoLowerCaseDigitsAByte() {
        #expect(TextFormat.hex([0x00, 0x0f, 0xa5, 0xff]) == "000fa5ff")
        #expect(TextFormat.hex(Array("/tmp/a b".utf8)) == "2f746d702f612062")
        #expect(TextFormat.fixed(.nan, digits: 2) == "nan")
    }
}
