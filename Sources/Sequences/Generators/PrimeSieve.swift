/// The primes 2, 3, 5, 7, …, from an incremental segmented sieve of Eratosthenes, unbounded.
///
/// The sieve covers odd numbers only, one segment of ``segmentLength`` of them (32 KiB of flags, sized
/// for a level-1 cache) at a time. Each segment is crossed off with the odd primes up to the square root
/// of its last number, which a small plain sieve finds (and extends, doubling, as the segments climb).
/// Skipping counts the unmarked flags of whole segments without producing anything.
///
/// Memory is one segment plus the base primes: about √p / ln √p four-byte primes near the prime p
/// (some 550 of them near the millionth prime, 15,485,863). The numbers are `UInt64`; should the sieve
/// ever reach the end of that range (centuries away) the sequence ends instead of wrapping.
///
/// **Ownership:** a value type; its two arrays are private to it.
///
/// **Thread safety:** value type; not shared.
struct PrimeSieve: TermGenerator {
    static var skipChunk: Int { 65_536 }

    /// Odd numbers per segment.
    static let segmentLength = 32_768

    /// Whether 2, the only even prime, which the odd-only segments leave out, has been produced.
    private var producedTwo = false
    /// `segment[i] != 0` when `segmentStart + 2 i` is composite; only the first `segmentCount` flags are valid.
    private var segment: [UInt8] = []
    private var segmentStart: UInt64 = 1
    private var segmentCount = 0
    /// The next flag to look at.
    private var position = 0
    /// The first number of the next segment, or `nil` past the end of the `UInt64` range.
    private var nextSegmentStart: UInt64? = 3
    /// The odd primes up to `basePrimeLimit`.
    private var basePrimes: [UInt32] = []
    private var basePrimeLimit: UInt64 = 2

    /// - Complexity: amortized O(1) per prime passed, about a nanosecond each.
    mutating func skip(_ count: Int) -> Bool {
        var remaining = count
        if remaining > 0 && !producedTwo {
            producedTwo = true
            remaining -= 1
        }
        while remaining > 0 {
            let (available, _) = scan(limit: Int.max)
            if available <= remaining {
                remaining -= available
                position = segmentCount
                guard fillNextSegment() else { return false }
            } else {
                let (_, end) = scan(limit: remaining)
                position = end
                remaining = 0
            }
        }
        return true
    }

    /// - Complexity: amortized O(log log p) per prime.
    mutating func next(index: Int) -> BigUInt? {
        if !producedTwo {
            producedTwo = true
            return BigUInt(2)
        }
        while true {
            let found = segment.withUnsafeBufferPointer { flags -> Int? in
                var candidate = position
                while candidate < segmentCount {
                    if flags[candidate] == 0 { return candidate }
                    candidate += 1
                }
                return nil
            }
            if let found {
                position = found + 1
                // found < segmentCount, and the segment was sized so that its last number fits.
                return BigUInt(segmentStart &+ 2 &* UInt64(truncatingIfNeeded: found))
            }
            position = segmentCount
            guard fillNextSegment() else { return nil }
        }
    }

    /// Counts unmarked flags from `position`, stopping after `limit` of them.
    ///
    /// - Returns: The number counted and the position just past the last one counted (or the segment end).
    private func scan(limit: Int) -> (count: Int, end: Int) {
        segment.withUnsafeBufferPointer { flags in
            if limit >= segmentCount - position {
                // Flags are 0 or 1, so the unmarked count is the length less the sum: a loop that vectorizes.
                var marked = 0
                for index in position..<segmentCount {
                    marked &+= Int(flags[index])
                }
                let available = segmentCount - position - marked
                if available <= limit { return (available, segmentCount) }
            }
            var found = 0
            var index = position
            while index < segmentCount && found < limit {
                if flags[index] == 0 { found += 1 }
                index += 1
            }
            return (found, index)
        }
    }

    /// Sieves the next segment.
    ///
    /// - Returns: `false` if there is none: the previous one reached the end of the `UInt64` range.
    private mutating func fillNextSegment() -> Bool {
        guard let low = nextSegmentStart else { return false }
        // The odd numbers from low through UInt64.max (which is odd); never fewer than one.
        let oddsLeft = (UInt64.max - low) / 2 + 1
        let count = Int(truncatingIfNeeded: min(UInt64(Self.segmentLength), oddsLeft))
        let highest = low + 2 * UInt64(count - 1)
        nextSegmentStart = highest <= UInt64.max - 2 ? highest + 2 : nil

        ensureBasePrimes(through: Self.integerSquareRoot(of: highest))
        if segment.count < count {
            segment = Array(repeating: 0, count: count)
        }
        let primes = basePrimes
        segment.withUnsafeMutableBufferPointer { flags in
            flags.update(repeating: 0)
            for prime in primes {
                let step = UInt64(prime)
                // Primes are below 2^32, so the square fits.
                let square = step * step
                if square > highest { break }
                var first: UInt64
                if square >= low {
                    first = square
                } else {
                    let remainder = low % step
                    let (rounded, overflow) = low.addingReportingOverflow(remainder == 0 ? 0 : step - remainder)
                    if overflow { continue }
                    first = rounded
                    if first % 2 == 0 {
                        let (odd, oddOverflow) = first.addingReportingOverflow(step)
                        if oddOverflow { continue }
                        first = odd
                    }
                }
                if first > highest { continue }
                // Consecutive odd multiples are 2p apart, which is p flags apart.
                var index = Int(truncatingIfNeeded: (first - low) / 2)
                let stride = Int(truncatingIfNeeded: step)
                while index < count {
                    flags[index] = 1
                    index &+= stride
                }
            }
        }
        segmentStart = low
        segmentCount = count
        position = 0
        return true
    }

    /// Makes `basePrimes` hold every odd prime up to at least `limit`.
    private mutating func ensureBasePrimes(through limit: UInt64) {
        if limit <= basePrimeLimit { return }
        // Double at least, so that a climbing sieve re-runs this only O(log) times.
        let (doubled, overflow) = basePrimeLimit.multipliedReportingOverflow(by: 2)
        let target = min(max(limit, overflow ? limit : doubled, 1_024), UInt64(UInt32.max))
        let size = Int(truncatingIfNeeded: target) + 1
        var composite = [Bool](repeating: false, count: size)
        var primes: [UInt32] = []
        var candidate = 3
        while candidate < size {
            if !composite[candidate] {
                primes.append(UInt32(truncatingIfNeeded: candidate))
                let (square, squareOverflow) = candidate.multipliedReportingOverflow(by: candidate)
                if !squareOverflow {
                    var multiple = square
                    while multiple < size {
                        composite[multiple] = true
                        multiple += 2 * candidate
                    }
                }
            }
            candidate += 2
        }
        basePrimes = primes
        basePrimeLimit = target
    }

    /// The largest `r` with `r * r <= value`.
    static func integerSquareRoot(of value: UInt64) -> UInt64 {
        var root = UInt64(Double(value).squareRoot())
        // The floating-point estimate can be off by one either way near 2^64; settle it exactly.
        while root > 0 && root.multipliedReportingOverflow(by: root).overflow { root -= 1 }
        while root * root > value { root -= 1 }
        while true {
            let (square, overflow) = (root + 1).multipliedReportingOverflow(by: root + 1)
            if overflow || square > value { break }
            root += 1
        }
        return root
    }
}
