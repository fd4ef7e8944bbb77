import Synchronization

/// The source of generated request IDs, trace IDs and span IDs: a process-wide counter run through keyed
/// bijective mixes (SplitMix64's finaliser), so every value of a process is distinct, none repeats before 2^64
/// requests, and a random per-process key makes processes differ. Not cryptographic: these name requests,
/// they guard nothing.
///
/// **Thread safety:** safe to call from any thread (one atomic increment).
enum CorrelationIDs {
    private static let counter = Atomic<UInt64>(0)
    private static let keys: (UInt64, UInt64, UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next(), generator.next(), generator.next())
    }()

    /// One request's fresh identifiers.
    static func next() -> (requestID: String, traceID: (high: UInt64, low: UInt64), spanID: UInt64) {
        let tick = counter.wrappingAdd(1, ordering: .relaxed).newValue
        let keys = keys
        let first = mix(tick ^ keys.0)
        let second = mix(tick &+ keys.1)
        var span = mix(tick ^ keys.2)
        if span == 0 { span = 1 }
        // An all-zero trace ID is invalid (W3C); one in 2^128, but checked all the same.
        let high = mix(first ^ keys.3)
        let trace = (high: high, low: high | second == 0 ? 1 : second)
        return (requestID(first, second), trace, span)
    }

    /// 13 base-32 digits of `first` (all 64 bits) and 2 of `second`: 15 characters, written straight into a
    /// small string (no allocation, no table).
    private static func requestID(_ first: UInt64, _ second: UInt64) -> String {
        @inline(__always) func digit(_ value: UInt64) -> UInt8 {
            let five = UInt8(truncatingIfNeeded: value & 31)
            return five < 10 ? five &+ 0x30 : five &+ 0x57  // 0-9, then a-v
        }
        return String(unsafeUninitializedCapacity: 15) { buffer in
            var value = first
            for index in stride(from: 12, through: 0, by: -1) {
                buffer[index] = digit(value)
                value >>= 5
            }
            buffer[13] = digit(second)
            buffer[14] = digit(second >> 5)
            return 15
        }
    }

    /// SplitMix64's finaliser: a bijection of 64-bit values with good avalanche.
    @inline(__always)
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
