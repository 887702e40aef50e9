import CRawSystemCall
import Foundation

/// A built executable of this package (they sit beside the test bundle).
public func builtExecutable(_ name: String) -> String {
    var directory = Bundle.main.bundleURL
    while !FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path), directory.path != "/" {
        directory.deleteLastPathComponent()
    }
    return directory.appendingPathComponent(name).path
}

/// Runs a child process to the end and returns its exit status and standard output.
public func runChild(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// SplitMix64: a seeded generator, so a generated case (a document, a path spelling) replays.
public struct SeededRandom: RandomNumberGenerator {
    public var state: UInt64
    public init(state: UInt64) { self.state = state }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Makes the file at `path` with `contents` (and `permissions`, when given), or throws: an input
/// a test could not write fails the test there, not later and strangely.
public func makeFile(_ path: String, _ contents: Data = Data(), permissions: Int? = nil) throws {
    let attributes: [FileAttributeKey: Any]? = permissions.map { [.posixPermissions: $0] }
    guard FileManager.default.createFile(atPath: path, contents: contents, attributes: attributes) else {
        throw FileNotMade(description: "could not make \(path)")
    }
}

public struct FileNotMade: Error, CustomStringConvertible { public let description: String }

/// The running kernel's Landlock ABI (landlock_create_ruleset's VERSION flag), below 1 without it.
public let kernelLandlockABI = af_test_syscall(444, 0, 0, 1, 0, 0)

/// A file's permission bits, or -1 when it cannot be read.
public func fileMode(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber)?.intValue ?? -1
}
