/// How long a client waits before each attempt to reconnect: exponential backoff with jitter, as a value.
///
/// Delays are computed, never slept: ``RESPConnectionStateMachine`` asks for the delay after each failed attempt
/// and reports it as a deadline. The n-th consecutive failure waits
/// `min(maxDelay, initialDelay × multiplierⁿ⁻¹) × (1 − jitter × r)` for a uniform `r` in `[0, 1)`, so with the
/// defaults (100 ms, ×2, at most 10 s, jitter 0.5) the waits are 50–100 ms, 100–200 ms, 200–400 ms, … and
/// 5–10 s from the eighth failure on; replicas that lost Redis together do not come back in lockstep.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public struct RESPReconnectPolicy: Sendable, Equatable {
    /// The base wait after the first failure. Default 100 ms.
    public var initialDelay: Duration
    /// The largest base wait. Default 10 s.
    public var maxDelay: Duration
    /// How much the base wait grows per failure; below 1 counts as 1. Default 2.
    public var multiplier: Double
    /// The fraction of the base wait that is random, in 0…1 (clamped). Default 0.5.
    public var jitter: Double
    /// Consecutive failed attempts after which the client gives up and closes; nil retries forever (the default).
    /// Zero never reconnects.
    public var maxAttempts: Int?

    public init(
        initialDelay: Duration = .milliseconds(100),
        maxDelay: Duration = .seconds(10),
        multiplier: Double = 2,
        jitter: Double = 0.5,
        maxAttempts: Int? = nil
    ) {
        self.initialDelay = max(.zero, initialDelay)
        self.maxDelay = max(.zero, maxDelay)
        self.multiplier = multiplier.isNaN ? 1 : max(1, multiplier)
        self.jitter = jitter.isNaN ? 0 : min(1, max(0, jitter))
        self.maxAttempts = maxAttempts.map { max(0, $0) }
    }

    /// A policy that never reconnects: the first failure closes the client.
    public static let never = RESPReconnectPolicy(maxAttempts: 0)

    /// Whether another attempt follows `failures` consecutive failed ones.
    public func allowsAttempt(after failures: Int) -> Bool {
        guard let maxAttempts else { return true }
        return failures < maxAttempts
    }

    /// The wait after the `failure`-th consecutive failure (1 for the first).
    ///
    /// - Parameter random: A uniform number in `[0, 1)` (clamped); 0 gives the full base wait.
    public func delay(afterFailure failure: Int, random: Double) -> Duration {
        let cap = RESPReconnectPolicy.seconds(maxDelay)
        var base = min(cap, RESPReconnectPolicy.seconds(initialDelay))
        var step = 1
        // Bounded: once the cap is reached (or after 1,100 steps, when a multiplier just above 1 crawls) it stays.
        while step < failure && base < cap && step < 1_100 {
            base = min(cap, base * multiplier)
            step &+= 1
        }
        let unit = random.isNaN ? 0 : min(1, max(0, random))
        return RESPReconnectPolicy.duration(seconds: base * (1 - jitter * unit))
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }

    /// `seconds` as a duration, clamped to 0…about 292 years (what nanoseconds in Int64 hold).
    static func duration(seconds: Double) -> Duration {
        guard seconds.isFinite, seconds > 0 else { return .zero }
        let nanoseconds = seconds * 1e9
        guard nanoseconds < 9.2e18 else { return .nanoseconds(Int64(9.2e18)) }
        return .nanoseconds(Int64(nanoseconds))
    }
}
