/// The naturals 0, 1, 2, …: the value is the index, so there is no state at all.
///
/// **Ownership:** a value type.
///
/// **Thread safety:** value type; not shared.
struct NaturalsGenerator: TermGenerator {
    static var skipChunk: Int { Int.max }

    func skip(_ count: Int) -> Bool {
        true
    }

    /// - Complexity: O(1); allocation-free below 10^18.
    @inline(__always)
    func next(index: Int) -> BigUInt? {
        // Indices are never negative, so the conversion is exact.
        BigUInt(UInt64(truncatingIfNeeded: index))
    }
}
