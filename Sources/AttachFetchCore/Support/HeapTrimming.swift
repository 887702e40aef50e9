internal import CAttachFetchShims
#if canImport(Glibc)
import Glibc
#endif

/// How much freed memory glibc's allocator keeps before handing it back to the system.
public enum HeapTrimming {
    /// Keeps up to `bytes` of freed memory at the top of each heap (M_TRIM_THRESHOLD) instead
    /// of glibc's 128 KiB. At that default, every small attachment's buffers were handed back
    /// and taken again: a thread arena shrinks and grows with mprotect, the main heap with brk,
    /// about 19 calls per attachment; without them the kernel time of one more small JPEG fell
    /// from 0.54 to 0.36 ms (docs/performance.md, "File-system calls and kernel time"). Peak memory is unchanged; an idle process may hold `bytes` per arena more.
    /// The CLI and `serve` call it at start, before forking their decoder workers (which also
    /// trim themselves when idle); a program embedding the library decides for itself.
    public static func keepFreed(upTo bytes: Int) {
        _ = mallopt(M_TRIM_THRESHOLD, Int32(clamping: bytes))
    }
}
