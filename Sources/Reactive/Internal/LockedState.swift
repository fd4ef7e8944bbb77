#if !SPOUT_TSAN
    import Synchronization
#endif

#if SPOUT_TSAN
    /// A value behind a lock, with `Synchronization.Mutex`'s shape (`init(_:)`, `withLock(_:)`): what
    /// every module of the package uses where it would write `Mutex<Value>`.
    ///
    /// In an ordinary build it *is* `Mutex<Value>` (a type alias, below), so release code is
    /// unchanged. Built with `-Xswiftc -DSPOUT_TSAN` it is this struct: the value in heap storage of
    /// its own and a ``PthreadMutex`` (as ``Lock`` has in that build), because ThreadSanitizer on
    /// Linux does not see the futex `Mutex` is built on and reports every access it guards as a race
    /// (see ``Lock``).
    ///
    /// **Ownership:** owns its value; frees it and the mutex when destroyed.
    ///
    /// **Thread safety:** safe to call from any thread. Not re-entrant.
    package struct LockedState<Value: ~Copyable>: ~Copyable {
        private let mutex = PthreadMutex()
        // In heap storage: `withLock` borrows `self` and still hands its body the value `inout`.
        private let value: UnsafeMutablePointer<Value>

        package init(_ initialValue: consuming sending Value) {
            value = .allocate(capacity: 1)
            value.initialize(to: initialValue)
        }

        deinit {
            value.deinitialize(count: 1)
            value.deallocate()
        }

        /// Runs `body` with the lock held on the value and returns its result.
        package borrowing func withLock<Result: ~Copyable, E: Error>(
            _ body: (inout sending Value) throws(E) -> sending Result
        ) throws(E) -> sending Result {
            mutex.lock()
            defer { mutex.unlock() }
            return try body(&value.pointee)
        }
    }

    // @unchecked Sendable: audited, the value is only reached through `withLock`, under the pthread
    // mutex, and enters and leaves it as `sending`, like `Mutex`'s.
    extension LockedState: @unchecked Sendable where Value: ~Copyable {}
#else
    /// A value behind a lock: `Synchronization.Mutex` itself in an ordinary build. Built with
    /// `-Xswiftc -DSPOUT_TSAN`, a pthread-backed struct of the same shape that ThreadSanitizer
    /// understands (see the other branch of this file, and ``Lock``). A file that uses it imports
    /// `Synchronization` as well, for `Mutex`'s members.
    package typealias LockedState<Value: ~Copyable> = Mutex<Value>
#endif
