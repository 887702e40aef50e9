import Foundation
import TestHelpers

/// The files `contract-lists` writes, copied into a scratch directory at their paths in the
/// package: a test edits its copy by hand and runs the program there.
func copyOfTheGeneratedLists() throws -> Scratch {
    let scratch = Scratch()
    for path in ["docs/descriptor.md", "Sources/AttachFetch/AttachFetch.docc/DescriptorContract.md"] {
        let target = URL(fileURLWithPath: scratch.path).appendingPathComponent(path)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: packageRoot.appendingPathComponent(path), to: target)
    }
    return scratch
}
