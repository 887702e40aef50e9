import Foundation
import Testing

/// The device library and what it is built from import only what a Notification Service
/// Extension links anyway: Foundation (FoundationNetworking where URLSession lives apart; the
/// codec FoundationEssentials where it exists, as the decoder worker links only that part) and
/// each other; the codec's primitives CryptoKit where it exists, libcrypto on Linux (each only
/// in its own file, under `#if canImport` of it), or swift-crypto's `Crypto` (CryptoKit's API)
/// when a Linux build asks for it. UserNotifications only in the file that makes the system's
/// attachment, and only where it exists.
@Suite struct ImportTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// The modules each target may import.
    static let allowed: [String: Set<String>] = [
        "AttachFetchDevice": ["Foundation", "FoundationNetworking", "EncryptedContent", "DeadlineRace"],
        "EncryptedContent": ["Foundation", "FoundationEssentials", "FoundationNetworking", "Crypto"],
        "DeadlineRace": ["Foundation"],
    ]

    /// Files allowed one more module, imported only under `#if canImport` of it.
    static let platformOnly: [String: String] = ["NotificationAttachments.swift": "UserNotifications",
                                                 "ContentCrypto.swift": "CryptoKit", "ContentCrypto+OpenSSL.swift": "CLibcrypto",
                                                 "SHA256Context.swift": "CLibcrypto"]

    /// The imports of `text` that are not allowed, each as "line: text". An import of a module
    /// in `guarded` counts as allowed only inside `#if canImport(that module)` (the condition may
    /// go on: `&& ...`).
    static func violations(in text: String, allowed: Set<String>, guarded: String? = nil) -> [String] {
        var problems: [String] = []
        var conditions: [String] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#if ") { conditions.append(line) }
            if line.hasPrefix("#endif"), !conditions.isEmpty { conditions.removeLast() }
            // `import X`, `@_exported import X`, `public import X`, `import struct X.Y`, ...
            let words = line.split(separator: " ").map(String.init)
            guard let at = words.firstIndex(of: "import"), words[..<at].allSatisfy({ $0.hasPrefix("@") || ["public", "internal", "package", "private", "fileprivate"].contains($0) }),
                  at + 1 < words.count else { continue }
            let kinds: Set<String> = ["struct", "class", "enum", "protocol", "typealias", "func", "var", "let"]
            let target = kinds.contains(words[at + 1]) && at + 2 < words.count ? words[at + 2] : words[at + 1]
            let module = String(target.split(separator: ".").first ?? "")
            if allowed.contains(module) { continue }
            if module == guarded, conditions.contains(where: { $0.hasPrefix("#if canImport(\(module))") }) { continue }
            problems.append("\(number + 1): \(line)")
        }
        return problems
    }

    @Test(arguments: ["AttachFetchDevice", "EncryptedContent", "DeadlineRace"])
    func theTargetImportsOnlyFoundationAndCrypto(target: String) throws {
        let directory = Self.sources.appendingPathComponent(target)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty, "no sources in \(directory.path)")
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            let problems = Self.violations(in: text, allowed: Self.allowed[target] ?? [], guarded: Self.platformOnly[file])
            #expect(problems.isEmpty, "\(target)/\(file) imports more than Foundation and Crypto: \(problems)")
        }
    }

    @Test func theCheckFindsEveryFormOfImport() {
        let allowed: Set<String> = ["Foundation", "Crypto"]
        #expect(Self.violations(in: "import Foundation\nimport Crypto\n", allowed: allowed).isEmpty)
        for line in ["import Glibc", "@_exported import NIOCore", "public import Logging", "import struct Dispatch.DispatchTime",
                     "  import CCryptoBoringSSL", "@preconcurrency import Darwin"] {
            #expect(Self.violations(in: "import Foundation\n\(line)\n", allowed: allowed) == ["2: \(line.trimmingCharacters(in: .whitespaces))"], "\(line)")
        }
        // A platform module: allowed only under its `canImport`.
        let guarded = "#if canImport(UserNotifications)\nimport UserNotifications\n#endif\n"
        #expect(Self.violations(in: guarded, allowed: allowed, guarded: "UserNotifications").isEmpty)
        #expect(Self.violations(in: "import UserNotifications\n", allowed: allowed, guarded: "UserNotifications").count == 1)
        #expect(Self.violations(in: guarded, allowed: allowed).count == 1, "not in a file allowed it")
    }
}
