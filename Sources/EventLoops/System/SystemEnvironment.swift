import Glibc

/// Process-wide settings and the clocks of the event loops and the protocols on them.
///
/// **Ownership:** Stateless namespace.
///
/// **Thread safety:** Safe to call from any thread.
public enum SystemEnvironment {
    /// Ignores `SIGPIPE` for the whole process: a peer that closes mid-write must not kill the server.
    public static func ignoreBrokenPipeSignal() {
        _ = signal(SIGPIPE, SIG_IGN)
    }

    /// Raises the soft `RLIMIT_NOFILE` to the hard limit, so thousands of sockets can be open.
    ///
    /// The soft limit is often 1024 for historical reasons (`select(2)` cannot watch higher descriptors); this
    /// process never uses `select`, so it takes what the hard limit allows, as nginx, Go's runtime and most
    /// servers do. The hard limit is the operator's: it is never raised.
    /// - Returns: The soft limit now in force.
    @discardableResult
    public static func raiseOpenFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return Int(clamping: raised.rlim_cur) }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// The number of online processors (at least 1).
    public static var processorCount: Int {
        max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }

    /// A monotonic clock in nanoseconds (`CLOCK_MONOTONIC_COARSE`, millisecond-ish resolution).
    @inlinable @inline(__always)
    public static func monotonicNanoseconds() -> UInt64 {
        nanoseconds(of: CLOCK_MONOTONIC_COARSE)
    }

    /// The same clock read precisely (`CLOCK_MONOTONIC`), for deadlines finer than the coarse clock's few
    /// milliseconds: the event loops' timers (a fan-out's spacing).
    @inlinable @inline(__always)
    public static func preciseMonotonicNanoseconds() -> UInt64 {
        nanoseconds(of: CLOCK_MONOTONIC)
    }

    @usableFromInline @inline(__always)
    static func nanoseconds(of clock: clockid_t) -> UInt64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// Wall-clock seconds since the Unix epoch (`CLOCK_REALTIME_COARSE`).
    @inlinable @inline(__always)
    public static func wallClockSeconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &spec)
        return Int64(spec.tv_sec)
    }
}
