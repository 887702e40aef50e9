import Testing
@testable import AttachFetchMedia

/// Which parameter sets an HEVC header holds: an hvcC record's arrays, or Annex B units.
@Suite struct HEVCParameterSetsTests {
    /// An hvcC record: 22 bytes of profile and format, then `arrays` as (type, units' lengths).
    static func record(_ arrays: [(type: UInt8, lengths: [Int])]) -> [UInt8] {
        var bytes: [UInt8] = [1] + [UInt8](repeating: 0, count: 21) + [UInt8(arrays.count)]
        for (type, lengths) in arrays {
            bytes += [0x80 | type, UInt8(lengths.count >> 8), UInt8(lengths.count & 0xFF)]
            for length in lengths { bytes += [UInt8(length >> 8), UInt8(length & 0xFF)] + [UInt8](repeating: 0x40, count: length) }
        }
        return bytes
    }

    static func inHeader(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBufferPointer { HEVCParameterSets.inHeader($0) } }

    @Test func aRecordWithEachParameterSetHasThemAndOneWithoutDoesNot() {
        #expect(Self.inHeader(Self.record([(32, [24]), (33, [40]), (34, [7]), (39, [12])])))
        #expect(!Self.inHeader(Self.record([(32, [24]), (33, [40])])), "no PPS")
        #expect(!Self.inHeader(Self.record([(63, [24]), (63, [40]), (63, [7])])), "arrays of another type")
        #expect(!Self.inHeader(Self.record([(32, []), (33, [40]), (34, [7])])), "an empty array")
        #expect(!Self.inHeader(Self.record([])))
    }

    @Test func aRecordCutShortCountsOnlyWhatIsWhole() {
        let whole = Self.record([(32, [24]), (33, [40]), (34, [7])])
        #expect(!Self.inHeader(Array(whole.dropLast(3))), "the PPS is cut")
        #expect(!Self.inHeader(Array(whole.prefix(10))))
        #expect(!Self.inHeader([]))
    }

    @Test func annexBUnitsAreReadByTheirStartCodes() {
        // Type in bits 1-6 of the first byte: VPS 0x40, SPS 0x42, PPS 0x44.
        let annexB: [UInt8] = [0, 0, 0, 1, 0x40, 1, 9, 9, 0, 0, 1, 0x42, 1, 7, 0, 0, 0, 1, 0x44, 1, 5]
        #expect(Self.inHeader(annexB))
        #expect(!Self.inHeader(Array(annexB.prefix(14))), "no PPS")
    }
}
