import Foundation
import Testing

/// An app's extension that depends on attach-fetch for `AttachFetchDevice` alone, with
/// `traits: []`, resolves none of the server's packages and builds: a throwaway consumer
/// package, resolved offline (a path dependency on this checkout).
@Suite struct ConsumerPackageTests {
    /// The packages only the pipeline, the service, the CLI and their tests use.
    static let serverPackages = ["swift-nio", "hummingbird", "swift-prometheus", "swift-service-lifecycle", "swift-log",
                                 "swift-collections", "swift-argument-parser", "swift-distributed-tracing", "swift-docc-plugin"]

    @Test func theDeviceLibraryAloneResolvesNoServerPackageAndBuilds() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let consumer = FileManager.default.temporaryDirectory.appendingPathComponent("device-consumer-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: consumer) }
        let sources = consumer.appendingPathComponent("Sources/Extension")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try """
            // swift-tools-version:6.1
            import PackageDescription
            let package = Package(
                name: "consumer",
                platforms: [.iOS(.v15), .macOS(.v12)],
                dependencies: [.package(path: "\(root.path)", traits: [])],
                targets: [.target(name: "Extension", dependencies: [.product(name: "AttachFetchDevice", package: "\(root.lastPathComponent)")])]
            )
            """.write(to: consumer.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try """
            import AttachFetchDevice
            import Foundation
            public func fetcher() -> EncryptedAttachmentFetcher { EncryptedAttachmentFetcher(directory: URL(fileURLWithPath: "/tmp")) }
            """.write(to: sources.appendingPathComponent("Extension.swift"), atomically: true, encoding: .utf8)

        let dependencies = try await swift(["package", "show-dependencies", "--format", "flatlist"], in: consumer)
        #expect(dependencies.status == 0, "\(dependencies.output)")
        for package in Self.serverPackages {
            #expect(!dependencies.output.contains(package), "the consumer resolves \(package): \(dependencies.output)")
        }
        let build = try await swift(["build", "-debug-info-format", "none"], in: consumer)
        #expect(build.status == 0, "\(build.output.suffix(2_000))")
        let resolved = (try? String(contentsOf: consumer.appendingPathComponent("Package.resolved"), encoding: .utf8)) ?? ""
        for package in Self.serverPackages {
            #expect(!resolved.contains(package), "Package.resolved pins \(package)")
        }
        print("a consumer of AttachFetchDevice with traits []: resolves \(dependencies.output.split(separator: "\n").count) package(s), builds")
    }

    /// Runs `swift arguments` in `directory`: its status and output, errors included.
    private func swift(_ arguments: [String], in directory: URL) async throws -> (status: Int32, output: String) {
        let (status, output) = try await runProgram(URL(fileURLWithPath: "/usr/bin/env"), ["swift"] + arguments, in: directory, withErrors: true)
        return (status, String(decoding: output, as: UTF8.self))
    }
}
