import Foundation

#if FUZZING
/// libFuzzer's entry point (clang's compiler-rt), used instead of its own main() because
/// SwiftPM gives every executable target a Swift main.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt
#endif

/// What a fuzz target's `main` does, shared by the fuzz targets: built for libFuzzer (with
/// `-DFUZZING`, scripts/fuzz.sh and scripts/fuzz-decoder.sh), it hands control to libFuzzer's
/// driver, which calls `target` for every input; built normally, the program is a reproducer,
/// which reads each file named on its command line and hands its bytes to `replay`.
public enum FuzzDriver {
    /// Never returns when fuzzing; returns after the last input replayed otherwise. `options`:
    /// leading arguments that are the target's own, not inputs. No input: `usage`, exit 2.
    public static func run(target: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt, usage: String,
                           options: Set<String> = [], replay: (_ path: String, _ bytes: [UInt8]) -> Void) {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, target))
        #else
        let paths = CommandLine.arguments.dropFirst().drop { options.contains($0) }
        guard !paths.isEmpty else {
            FileHandle.standardError.write(Data("usage: \(usage)\n".utf8))
            exit(2)
        }
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                exit(2)
            }
            replay(path, Array(data))
        }
        #endif
    }
}

