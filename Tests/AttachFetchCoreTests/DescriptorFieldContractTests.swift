import Foundation
import TestHelpers
import Testing
@testable import AttachFetchCore

/// `AttachmentDescriptor.fieldContracts` is the one definition of the descriptor's field tables
/// in docs/descriptor.md and the DocC catalogue (written by `contract-lists`); these tests break
/// when it stops naming exactly the fields the descriptor's `Codable` conformance writes, or a
/// table stops being what it says.
@Suite struct DescriptorFieldContractTests {
    @Test func everyFieldTheEncoderWritesHasOneRow() throws {
        let written = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(AttachmentDescriptor.specimen)) as? [String: Any])
        let documented = AttachmentDescriptor.fieldContracts.flatMap(\.fields)
        let twice = Dictionary(grouping: documented, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        #expect(twice.isEmpty, "in more than one row: \(twice)")
        #expect(Set(documented) == Set(written.keys),
                "written, no row: \(Set(written.keys).subtracting(documented).sorted()); a row, not written: \(Set(documented).subtracting(written.keys).sorted())")
        #expect(AttachmentDescriptor.fieldContracts.allSatisfy { !$0.present.isEmpty && !$0.meaning.isEmpty && !$0.meaning.contains("|") })
    }

    /// A field table edited by hand is found in the file edited, and written back.
    @Test func aFieldTableEditedByHandIsFoundAndWrittenBack() throws {
        let scratch = try copyOfTheGeneratedLists()
        let docc = URL(fileURLWithPath: scratch.path + "/Sources/AttachFetch/AttachFetch.docc/DescriptorContract.md")
        let row = "| ``/AttachFetchCore/AttachmentDescriptor/url`` | always | exactly as given |"
        let text = try String(contentsOf: docc, encoding: .utf8)
        #expect(text.contains(row), "the generated row for `url`")
        // The row gone, as if a field were removed by hand.
        try text.replacingOccurrences(of: row + "\n", with: "").write(to: docc, atomically: true, encoding: .utf8)
        let edited = try runBuiltProgram("contract-lists", ["--check"], in: scratch.path)
        #expect(edited.status == 1 && edited.output.contains("DescriptorContract.md") && !edited.output.contains("docs/descriptor.md"), "\(edited.output)")
        #expect(try runBuiltProgram("contract-lists", [], in: scratch.path).status == 0)
        #expect(try String(contentsOf: docc, encoding: .utf8) == text)
    }
}
