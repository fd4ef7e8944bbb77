@testable import Reactive

/// A value behind Reactive's ``Lock``, with `Mutex`'s `withLock` shape: the tests' shared counters and
/// boxes. Not `Synchronization.Mutex`, so that a ThreadSanitizer build (`-DSPOUT_TSAN`, where `Lock`
/// is a pthread mutex) sees the synchronization.
///
/// **Thread safety:** safe to call from any thread (guarded by `lock`).
final class LockedValue<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched inside `lock`.
    private let lock = Lock()
    private var value: Value  // Guarded by lock.

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` on the value with the lock held.
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        lock.withLock { body(&value) }
    }
}
