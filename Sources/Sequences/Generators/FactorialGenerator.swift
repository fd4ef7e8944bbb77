/// The factorials 0! = 1, 1! = 1, 2! = 2, …, n! at index n, exact.
///
/// Each step multiplies by a machine word, taken lazily before the next element so that it can reuse the
/// previous value's limbs in place.
///
/// **Ownership:** a value type.
///
/// **Thread safety:** value type; not shared.
struct FactorialGenerator: TermGenerator {
    static var skipChunk: Int { 64 }

    /// n!, the value of the next element unless `stepPending`.
    private var current = BigUInt(1)
    /// n. Indices stop at Int.max, so it never comes near UInt64.max.
    private var factor: UInt64 = 0
    /// Whether `current` was already produced, so the next element is one step further.
    private var stepPending = false

    /// - Complexity: `count` multiplications of numbers with about n log10(n/e) / 18 limbs each.
    mutating func skip(_ count: Int) -> Bool {
        if stepPending {
            step()
            stepPending = false
        }
        for _ in 0..<count {
            step()
        }
        return true
    }

    /// - Complexity: one multiplication by a machine word.
    mutating func next(index: Int) -> BigUInt? {
        if stepPending { step() }
        stepPending = true
        return current
    }

    private mutating func step() {
        factor += 1
        current *= factor
    }
}
