import Foundation

/// How long to wait before each retry: exponential growth from a base delay, capped, with optional
/// "full jitter" (a uniformly random delay between zero and the computed one).
///
/// Not in Combine. Retry *n* (counting from 0) waits `min(maximum, base × multiplier^n)` before
/// jitter. The arithmetic saturates at ``maximum``, so a huge `n` never overflows or traps. Delays
/// are computed in whole nanoseconds.
///
///     let backoff = Backoff(base: .milliseconds(100), maximum: .seconds(1), jitter: .none)
///     let delays = (0..<5).map { backoff.delay(forRetry: $0) }
///     print(delays)
///     // Prints: [0.1 seconds, 0.2 seconds, 0.4 seconds, 0.8 seconds, 1.0 seconds]
///
/// **Ownership:** a value.
///
/// **Thread safety:** value type; `Sendable`. The random source must be safe to call from any thread.
public struct Backoff: Sendable, CustomStringConvertible {
    /// Whether, and how, the computed delay is randomized.
    ///
    /// **Thread safety:** value type; not shared.
    public enum Jitter: Sendable, Equatable, Hashable {
        /// Wait exactly the computed delay.
        case none
        /// Wait a uniformly random delay in `0...computed` ("full jitter"), so that many clients
        /// that failed together do not retry together.
        case full
    }

    /// The delay before the first retry, before jitter. Negative counts as zero.
    public var base: Duration

    /// The factor by which the delay grows with each retry; below one (or not a number) counts as one.
    public var multiplier: Double

    /// The cap on every delay, including one asked for by the error. Negative counts as zero.
    public var maximum: Duration

    /// Whether the delay is randomized.
    public var jitter: Jitter

    /// Picks a number of nanoseconds in the given range for ``Jitter/full``; injectable so tests are
    /// deterministic. A result outside the range is clamped into it.
    public var random: @Sendable (ClosedRange<Int>) -> Int

    /// Creates a backoff policy.
    ///
    /// - Parameters:
    ///   - base: The delay before the first retry, before jitter.
    ///   - multiplier: The growth factor per retry; 2 by default.
    ///   - maximum: The cap on every delay.
    ///   - jitter: ``Jitter/full`` by default.
    ///   - random: The random source for jitter; the system generator by default.
    public init(
        base: Duration,
        multiplier: Double = 2,
        maximum: Duration,
        jitter: Jitter = .full,
        random: @escaping @Sendable (ClosedRange<Int>) -> Int = { Int.random(in: $0) }
    ) {
        self.base = base
        self.multiplier = multiplier
        self.maximum = maximum
        self.jitter = jitter
        self.random = random
    }

    public var description: String {
        "Backoff(base: \(base), multiplier: \(multiplier), maximum: \(maximum), jitter: \(jitter))"
    }

    /// The delay before retry `retry` (0 for the first retry) before jitter: `min(maximum, base × multiplier^retry)`.
    public func ceiling(forRetry retry: Int) -> Duration {
        .nanoseconds(ceilingNanoseconds(forRetry: retry))
    }

    /// The delay to wait before retry `retry` (0 for the first retry), with jitter applied.
    public func delay(forRetry retry: Int) -> Duration {
        .nanoseconds(delayNanoseconds(forRetry: retry))
    }

    /// A delay asked for by the server (such as `Retry-After`), capped by ``maximum``; never negative.
    public func cappedHint(_ hint: Duration) -> Duration {
        .nanoseconds(Swift.min(Swift.max(0, hint.saturatingNanoseconds), maximumNanoseconds))
    }

    internal var maximumNanoseconds: Int { Swift.max(0, maximum.saturatingNanoseconds) }

    internal func ceilingNanoseconds(forRetry retry: Int) -> Int {
        let cap = maximumNanoseconds
        let base = Swift.min(Swift.max(0, self.base.saturatingNanoseconds), cap)
        let factor = multiplier >= 1 ? multiplier : 1
        let grown = Double(base) * Foundation.pow(factor, Double(Swift.max(0, retry)))
        // `!(a < b)` is also true for NaN and infinity: those saturate to the cap.
        guard grown < Double(cap) else { return cap }
        return Int(grown)
    }

    internal func delayNanoseconds(forRetry retry: Int) -> Int {
        let ceiling = ceilingNanoseconds(forRetry: retry)
        switch jitter {
        case .none: return ceiling
        case .full: return Swift.min(Swift.max(0, random(0...ceiling)), ceiling)
        }
    }
}
