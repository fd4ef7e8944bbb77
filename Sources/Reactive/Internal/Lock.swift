#if SPOUT_TSAN
    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Darwin)
        import Darwin
    #endif
#else
    import Synchronization
#endif

/// A mutual-exclusion lock that guards state stored beside it, in the object that owns both.
///
/// `Mutex<Value>` from `Synchronization` owns its value and asks for `sending` in and out,
/// which Swift 6's region checker cannot prove for state machines that hold subscribers,
/// subscriptions and closures. This wraps a `Mutex<Void>`: the owner keeps its state in an
/// ordinary stored property and touches it only inside ``withLock(_:)``. That discipline is
/// what makes the owner's `@unchecked Sendable` true, and each owner's comment says so.
///
/// Built with `-Xswiftc -DSPOUT_TSAN`, it is a `pthread_mutex_t` in heap storage of its own
/// instead: ThreadSanitizer on Linux does not see the futex `Mutex` is built on, so it reports
/// every access a `Mutex` guards as a race; it understands `pthread_mutex_lock`. Swift has no
/// compilation condition for "built with `-sanitize=thread`", hence the flag (see docs/TESTING.md, "Sanitizers").
///
/// Never call into another stage (downstream, upstream, a user closure, a scheduler) while
/// holding it: compute an action inside, carry it out after.
///
/// **Ownership:** stored inline in its owner; no allocation of its own (one small allocation with
/// `SPOUT_TSAN`, freed when the lock is destroyed).
///
/// **Thread safety:** safe to call from any thread. Not re-entrant: locking it twice on one
/// thread deadlocks.
@usableFromInline
package struct Lock: ~Copyable {
    #if SPOUT_TSAN
        @usableFromInline
        internal let mutex = PthreadMutex()

        @inlinable
        package init() {}

        /// Runs `body` with the lock held and returns its result.
        @inlinable
        @inline(__always)
        package borrowing func withLock<Result>(_ body: () -> Result) -> Result {
            mutex.lock()
            defer { mutex.unlock() }
            return body()
        }
    #else
        @usableFromInline
        internal let mutex = Mutex<Void>(())

        @inlinable
        package init() {}

        /// Runs `body` with the lock held and returns its result.
        @inlinable
        @inline(__always)
        package borrowing func withLock<Result>(_ body: () -> Result) -> Result {
            // The result crosses `Mutex.withLock`'s `sending` boundary in a wrapper that says it may,
            // which is true for the same reason as the owners' `@unchecked Sendable`. Not through an
            // optional: an `Optional<Action>` of a generic multi-payload action enum is tested and
            // destroyed through runtime calls even in specialized code.
            mutex.withLock { _ in UncheckedTransfer(value: body()) }.value
        }
    #endif
}

#if SPOUT_TSAN
    // @unchecked Sendable: audited, its only state is a `PthreadMutex`, touched only by pthread calls.
    extension Lock: @unchecked Sendable {}

    /// A `pthread_mutex_t` in heap storage of its own, for the `SPOUT_TSAN` build of ``Lock`` and
    /// ``LockedState``: a pthread mutex must not move once initialized, and its owner may.
    ///
    /// **Ownership:** owns the mutex; destroys and frees it when destroyed.
    ///
    /// **Thread safety:** safe to call from any thread. Not re-entrant.
    @usableFromInline
    package struct PthreadMutex: ~Copyable, @unchecked Sendable {
        // @unchecked Sendable: audited, the pointee is a pthread mutex, touched only by pthread calls.
        @usableFromInline
        internal let mutex: UnsafeMutablePointer<pthread_mutex_t>

        @inlinable
        package init() {
            mutex = .allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }

        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
            mutex.deallocate()
        }

        @inlinable
        @inline(__always)
        package borrowing func lock() { pthread_mutex_lock(mutex) }

        @inlinable
        @inline(__always)
        package borrowing func unlock() { pthread_mutex_unlock(mutex) }
    }
#else
    extension Lock: Sendable {}
#endif

/// Carries a value out of ``Lock/withLock(_:)``; see there.
@usableFromInline
internal struct UncheckedTransfer<Value>: @unchecked Sendable {
    // @unchecked Sendable: audited, only used to return the result of a locked section to the
    // thread that ran it.
    @usableFromInline var value: Value

    @inlinable
    init(value: Value) {
        self.value = value
    }
}
