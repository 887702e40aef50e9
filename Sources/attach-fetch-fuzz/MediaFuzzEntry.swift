// Fuzz target for the sniff -> table -> limits -> decode -> thumbnail path on arbitrary bytes.
//
// Built for libFuzzer (scripts/fuzz.sh), with -DFUZZING: main hands control to libFuzzer's
// driver, which calls LLVMFuzzerTestOneInput for every input. Built normally, it is a
// reproducer: it runs the same path once on each file named on the command line, so that a
// crashing input can be replayed.
import AttachFetch
import Foundation
import FuzzDriver

/// One inspector (libmagic handle, libvips started) and one scratch directory per process.
private final class FuzzState {
    let inspector: LocalMediaInspector
    let directory: String

    /// In-process decoding for libFuzzer (it needs its target in this process, and coverage of
    /// the decoders); `--isolated` replays through a decoder worker process, the pipeline's path.
    init(isolated: Bool) {
        var configuration = AttachFetchConfiguration()
        configuration.thumbnailMaxEdge = 64
        configuration.isolation = isolated ? .processes : .none
        inspector = try! LocalMediaInspector(configuration: configuration)
        var template = Array((FileManager.default.temporaryDirectory.path + "/attach-fetch-fuzz-XXXXXX").utf8CString)
        directory = String(cString: mkdtemp(&template)!)
    }

    @discardableResult
    func run(_ bytes: UnsafeRawBufferPointer) -> AttachmentDescriptor {
        let input = "\(directory)/input"
        let thumbnail = "\(directory)/thumb"
        _ = FileManager.default.createFile(atPath: input, contents: Data(bytes))
        let descriptor = inspector.inspect(file: input, thumbnailBase: thumbnail)
        unlink(input)
        // The thumbnail, and what was delivered when the input had to be converted or made
        // playable: whatever the inspector left, so that the next input starts clean.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] { unlink("\(directory)/\(name)") }
        return descriptor
    }
}

nonisolated(unsafe) private let state = FuzzState(isolated: CommandLine.arguments.dropFirst().first == "--isolated")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    state.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

@main
struct FuzzMain {
    static func main() {
        FuzzDriver.run(target: fuzzOneInput,
                       usage: "attach-fetch-fuzz [--isolated] FILE...   (replays inputs through the fuzzed path; --isolated: in a decoder worker process)",
                       options: ["--isolated"]) { path, bytes in
            // One line per input: its path, status and reason code (tests and scripts read it).
            let descriptor = bytes.withUnsafeBytes { state.run($0) }
            print("ok \(path) \(descriptor.status.rawValue) \(descriptor.reason?.code.rawValue ?? "-") \(descriptor.reason?.message ?? "")")
        }
        // This process's own peak resident set (the kernel's VmHWM, which starts anew at exec;
        // a parent's wait4 figure would include the parent's memory at the spawn).
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        if let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) {
            print("peak-rss-kb \(line.split(separator: " ").dropFirst().first ?? "?")")
        }
    }
}
