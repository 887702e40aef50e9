import Foundation

/// A value behind a lock. Synchronization's `Mutex` would read the same, but ThreadSanitizer
/// cannot see its futex-based locking and reports every guarded access as a race; `NSLock`
/// is a pthread mutex, which it understands, so the TSan run of the tests stays meaningful.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only read or written inside `withLock`, under `lock`.
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
