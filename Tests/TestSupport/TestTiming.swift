import Foundation

/// How much longer than usual the tests' waits may take: `SPOUT_TEST_TIMEOUT_SCALE`, a whole factor (1 when
/// unset or not a positive integer). `.ci/sanitizers` sets it, because code built with ThreadSanitizer or
/// AddressSanitizer runs several times slower, and a wait sized for a plain build then expires before the
/// event it waits for. The waiting helpers (``TestSignal/wait(timeout:)``, ``LoopbackClient``'s reads, the
/// polling `eventually`/`waitUntil` helpers) apply it to every timeout they are given, so a test states the
/// timeout it would need in a plain build.
///
/// Only waits scale: a bound a test asserts on a measured duration ("answered within 50 ms") does not,
/// since that is the behaviour under test.
///
/// **Thread safety:** immutable after first use; safe from any thread.
public enum TestTiming {
    /// The factor, read once from the environment.
    public static let scale: Int = {
        guard let text = ProcessInfo.processInfo.environment["SPOUT_TEST_TIMEOUT_SCALE"], let value = Int(text),
            value > 0
        else { return 1 }
        return min(value, 100)
    }()

    /// `timeout` times ``scale``.
    public static func scaled(_ timeout: Duration) -> Duration {
        timeout * scale
    }

    /// Whether the factor is above 1 (a sanitizer build).
    public static var isScaled: Bool { scale > 1 }
}

/// Polls `condition` until it holds or `timeout` (scaled by ``TestTiming``) passes; for states that signal
/// nothing (a probe, a metric, a log, `INFO`, the process's thread list). Between looks it waits 5 ms on a
/// semaphore nobody signals: the result never depends on that interval, only the deadline ends the wait. It
/// blocks the calling thread, so a test calling it runs `.offPool`.
public func eventually(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + TestTiming.scaled(timeout)
    let signal = TestSignal()
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        _ = signal.wait(timeout: .milliseconds(5))
    }
    return try condition()
}
