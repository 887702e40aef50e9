import Foundation
import Testing

/// Sources stay small enough to read whole: at most 300 lines for Swift and C (`.swift`, `.c`,
/// `.h`), 400 for the inspector's JavaScript, and 400 for a test file. A longer file is split
/// by moving a cohesive extension into `Type+Topic.swift` beside it (a suite's tests by topic).
@Suite struct SourceLayoutTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    static let limits = ["swift": 300, "c": 300, "h": 300, "js": 400]
    static let testLimit = 400

    @Test func everySourceFileIsWithinItsLineLimit() throws {
        try Self.expectWithinLimits(Self.sources) { Self.limits[$0] }
    }

    @Test func everyTestFileIsWithinItsLineLimit() throws {
        try Self.expectWithinLimits(Self.sources.deletingLastPathComponent().appendingPathComponent("Tests")) { $0 == "swift" ? Self.testLimit : nil }
    }

    static func expectWithinLimits(_ folder: URL, _ limit: (String) -> Int?) throws {
        let files = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
        var offenders: [String] = []
        for case let url as URL in files {
            guard let limit = limit(url.pathExtension), let data = FileManager.default.contents(atPath: url.path) else { continue }
            // Lines as `wc -l` counts them: newlines, plus a last line without one.
            let newlines = data.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            let lines = newlines + (data.last.map { $0 == UInt8(ascii: "\n") ? 0 : 1 } ?? 0)
            if lines > limit {
                offenders.append("\(url.path.dropFirst(Self.sources.deletingLastPathComponent().path.count + 1)): \(lines) lines (at most \(limit))")
            }
        }
        #expect(offenders.isEmpty, "\(offenders.sorted().joined(separator: "\n"))")
    }

    /// The library's layers and what each may import of the library and of the C modules
    /// (docs/architecture.md, "Targets"). SwiftPM finds any module already built, so an import
    /// a target does not declare, or a C module reached through another target, may still compile.
    static let layers: [String: Set<String>] = [
        "AttachFetchCore": ["CMagic", "CLibcrypto", "CAttachFetchShims"],
        // Runtime machinery below the layers that run work.
        "AttachFetchRuntime": ["AttachFetchCore"],
        "AttachFetchTransfer": ["AttachFetchCore", "AttachFetchRuntime", "CCurl", "CLibcrypto", "CCurlShims"],
        "AttachFetchDecoderProtocol": ["AttachFetchCore", "CAttachFetchShims"],
        // The worker's confinement: no decoder.
        "DecoderSandbox": ["AttachFetchDecoderProtocol", "CAttachFetchShims"],
        // What runs inside the worker: no keeper, nothing that fetches.
        "AttachFetchMedia": ["AttachFetchCore", "AttachFetchDecoderProtocol", "DecoderSandbox", "CVips", "CFFmpeg", "CTurboJPEG", "CLCMS2", "CVipsShims", "CFFmpegShims", "CAttachFetchShims"],
        // The worker's keeper: no decoder.
        "AttachFetchDecoderKeeper": ["AttachFetchCore", "AttachFetchRuntime", "AttachFetchDecoderProtocol", "CAttachFetchShims"],
        // The S3 client, on the downloads' curl engine: nothing of the pipeline.
        "AttachFetchObjectStore": ["AttachFetchCore", "AttachFetchTransfer", "CCurl", "CCurlShims"],
        "AttachFetch": ["AttachFetchCore", "AttachFetchRuntime", "AttachFetchTransfer", "AttachFetchMedia", "AttachFetchDecoderProtocol", "AttachFetchDecoderKeeper",
                        "AttachFetchObjectStore", "CAttachFetchShims"],
    ]

    @Test func eachLayerImportsOnlyWhatIsBelowIt() throws {
        var offenders: [String] = []
        for (target, allowed) in Self.layers {
            let folder = Self.sources.appendingPathComponent(target)
            let files = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
            for case let url as URL in files where url.pathExtension == "swift" {
                let text = try String(contentsOf: url, encoding: .utf8)
                for line in text.split(separator: "\n") {
                    let words = line.split(separator: " ").map(String.init)
                    guard let at = words.firstIndex(of: "import"), at + 1 < words.count,
                          words[..<at].allSatisfy({ ["@_exported", "@preconcurrency", "internal", "package", "public"].contains($0) })
                    else { continue }
                    let module = words[at + 1]
                    let isLibraryOrC = module.hasPrefix("AttachFetch") || Self.layers[module] != nil || (module.hasPrefix("C") && module.dropFirst().first?.isUppercase == true)
                    if isLibraryOrC && !allowed.contains(module) {
                        offenders.append("\(target)/\(url.path.dropFirst(folder.path.count + 1)) imports \(module)")
                    }
                }
            }
        }
        #expect(offenders.isEmpty, "\(offenders.sorted().joined(separator: "\n"))")
    }
}
