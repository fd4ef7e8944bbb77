import Dispatch
import Reactive
import Synchronization

/// A counting signal a callback fires and a test waits on, always with a deadline.
///
/// **Ownership:** Shared by the test and the callbacks that capture it.
///
/// **Thread safety:** Safe to call from any thread (a `DispatchSemaphore`).
public final class TestSignal: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    public init() {}

    /// Fires once.
    public func signal() {
        semaphore.signal()
    }

    /// Waits for one firing; false if `timeout` passed first. It blocks the calling thread: from a
    /// test, that must be the test's own thread (see ``OffPoolTrait``).
    public func wait(
        timeout: Duration = .seconds(5),
        fileID: String = #fileID,
        filePath: String = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> Bool {
        OffPool.checkMayBlock("TestSignal.wait", fileID: fileID, filePath: filePath, line: line, column: column)
        let (seconds, attoseconds) = TestTiming.scaled(timeout).components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        return semaphore.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
    }
}

/// A value shared between a test and the callbacks it installs.
///
/// **Ownership:** Shared by the test and its callbacks.
///
/// **Thread safety:** Safe to call from any thread (guarded by a `Mutex`).
public final class TestBox<Value: Sendable>: Sendable {
    private let storage: LockedState<Value>

    public init(_ value: Value) {
        storage = LockedState(value)
    }

    /// The current value.
    public var value: Value {
        storage.withLock { $0 }
    }

    /// Mutates the value under the lock.
    public func update<R: Sendable>(_ body: @Sendable (inout Value) -> R) -> R {
        storage.withLock { body(&$0) }
    }
}
