import Foundation
import TestHelpers
import Testing
@testable import AttachFetchCore

/// Reason codes are defined once, in `ReasonCode.contracts`; everything else derives from it or
/// is generated from it by `contract-lists`, and these tests break when that stops being so.
@Suite struct ReasonCodeContractTests {
    /// Every code declared as a static member is in `contracts`, once, in declaration order,
    /// named as its raw value (a struct's static members cannot be listed in Swift).
    @Test func everyDeclaredCodeHasItsContract() throws {
        let source = try String(contentsOf: packageRoot.appendingPathComponent("Sources/AttachFetchCore/Descriptor/ReasonCode.swift"), encoding: .utf8)
        let declared = source.matches(of: /public static let (\w+) = ReasonCode\(rawValue: "(\w+)"\)/).map { (name: String($0.1), raw: String($0.2)) }
        #expect(declared.count >= 22)
        for code in declared where code.name != code.raw { Issue.record("ReasonCode.\(code.name) has the raw value \(code.raw)") }
        #expect(declared.map(\.raw) == ReasonCode.contracts.map(\.code.rawValue))
        #expect(Set(ReasonCode.allKnown).count == ReasonCode.allKnown.count, "a code is in the contracts twice")
    }

    /// `status` is the contract's, and a code this version does not know is `failed`.
    @Test func theStatusIsTheContracts() {
        for contract in ReasonCode.contracts { #expect(contract.code.status == contract.status, "\(contract.code)") }
        #expect(ReasonCode(rawValue: "aCodeFromANewerVersion").status == .failed)
        #expect(ReasonCode.timeout.status == .timedOut && ReasonCode.corruptMedia.status == .rejected && ReasonCode.publishFailed.status == .failed)
    }

    /// The generated lists are what the contracts say: `contract-lists --check` finds nothing
    /// to change in the repository's files, and finds a table edited by hand.
    @Test func theGeneratedListsAreCurrentAndAHandEditIsFound() throws {
        #expect(try runContractLists(["--check"], in: packageRoot.path).status == 0)
        // A copy of the two files, one of them edited: the check names it and fails.
        let scratch = try copyOfTheGeneratedLists()
        let docs = URL(fileURLWithPath: scratch.path + "/docs/descriptor.md")
        try String(contentsOf: docs, encoding: .utf8).replacingOccurrences(of: "| `timeout` | timedOut |", with: "| `timeout` | failed |")
            .write(to: docs, atomically: true, encoding: .utf8)
        let edited = try runContractLists(["--check"], in: scratch.path)
        #expect(edited.status == 1 && edited.output.contains("docs/descriptor.md") && !edited.output.contains("DescriptorContract.md"), "\(edited.output)")
        // Without --check it writes the table back.
        #expect(try runContractLists([], in: scratch.path).status == 0)
        #expect(try runContractLists(["--check"], in: scratch.path).status == 0)
    }

    private func runContractLists(_ arguments: [String], in directory: String) throws -> (status: Int32, output: String) {
        try runBuiltProgram("contract-lists", arguments, in: directory)
    }
}
