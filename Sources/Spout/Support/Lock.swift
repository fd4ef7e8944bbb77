#if SPOUT_TSAN
    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Darwin)
        import Darwin
    #endif
#else
    import Synchronization
#endif

/// Spout's own mutual-exclusion lock, for the state that a service object keeps beside it (caches, metrics,
/// log sinks, upstream transfers). It shadows `Reactive`'s lock of the same name inside this module, so `Spout`
/// does not borrow `Reactive`'s internals as a general utility.
///
/// The owner keeps its state in ordinary stored properties and touches them only inside ``withLock(_:)``;
/// that discipline is what makes the owners' `@unchecked Sendable` true. Never call out (a subscriber, a
/// callback, a writer) while holding it: decide inside, act after.
///
/// Built with `-Xswiftc -DSPOUT_TSAN` it is a `pthread_mutex_t` in heap storage of its own, like `Reactive`'s
/// lock: ThreadSanitizer on Linux does not model the futex that `Synchronization.Mutex` is built on and
/// would report every access it guards as a race, while it understands `pthread_mutex_lock`.
///
/// **Ownership:** stored inline in its owner (one small allocation with `SPOUT_TSAN`, freed with the lock).
///
/// **Thread safety:** safe to call from any thread. Not re-entrant: locking it twice on one thread deadlocks.
struct Lock: ~Copyable {
    #if SPOUT_TSAN
        // A stable address: a pthread mutex must not move once initialized, and `self` may.
        private let mutex: UnsafeMutablePointer<pthread_mutex_t>

        init() {
            mutex = .allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }

        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
            mutex.deallocate()
        }

        /// Runs `body` with the lock held and returns its result.
        @inline(__always)
        borrowing func withLock<Result>(_ body: () -> Result) -> Result {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return body()
        }
    #else
        private let mutex = Mutex<Void>(())

        init() {}

        /// Runs `body` with the lock held and returns its result.
        @inline(__always)
        borrowing func withLock<Result>(_ body: () -> Result) -> Result {
            // The result leaves `Mutex.withLock`'s `sending` boundary in a wrapper that says it may: true for
            // the same reason as the owners' `@unchecked Sendable`.
            mutex.withLock { _ in LockedResult(value: body()) }.value
        }
    #endif
}

#if SPOUT_TSAN
    // @unchecked Sendable: audited, the pointee is a pthread mutex, touched only by pthread calls.
    extension Lock: @unchecked Sendable {}
#else
    extension Lock: Sendable {}
#endif

/// Carries a result out of ``Lock/withLock(_:)``; see there.
private struct LockedResult<Value>: @unchecked Sendable {
    // @unchecked Sendable: audited, only returns the result of a locked section to the thread that ran it.
    var value: Value
}
