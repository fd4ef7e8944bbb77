#if SPOUT_TSAN
    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Darwin)
        import Darwin
    #endif
#else
    import Synchronization
#endif

#if SPOUT_TSAN
    /// A value behind a lock, with `Synchronization.Mutex`'s shape (`init(_:)`, `withLock(_:)`): what
    /// every module of the package uses where it would write `Mutex<Value>`.
    ///
    /// In an ordinary build it *is* `Mutex<Value>` (a type alias, below), so release code is
    /// unchanged. Built with `-Xswiftc -DSPOUT_TSAN` it is this struct: the value and a
    /// `pthread_mutex_t` in heap storage of their own, because ThreadSanitizer on Linux does not see
    /// the futex `Mutex` is built on and reports every access it guards as a race (see ``Lock``).
    ///
    /// **Ownership:** owns its value; frees it and the mutex when destroyed.
    ///
    /// **Thread safety:** safe to call from any thread. Not re-entrant.
    package struct LockedState<Value: ~Copyable>: ~Copyable {
        // Stable addresses: a pthread mutex must not move once initialized, and `self` may.
        private let mutex: UnsafeMutablePointer<pthread_mutex_t>
        private let value: UnsafeMutablePointer<Value>

        package init(_ initialValue: consuming sending Value) {
            mutex = .allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
            value = .allocate(capacity: 1)
            value.initialize(to: initialValue)
        }

        deinit {
            value.deinitialize(count: 1)
            value.deallocate()
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
            mutex.deallocate()
        }

        /// Runs `body` with the lock held on the value and returns its result.
        package borrowing func withLock<Result: ~Copyable, E: Error>(
            _ body: (inout sending Value) throws(E) -> sending Result
        ) throws(E) -> sending Result {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
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
