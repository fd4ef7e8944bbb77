/// The Fibonacci numbers F(0) = 0, F(1) = 1, F(n) = F(n-1) + F(n-2), exact.
///
/// It keeps F(i) and F(i+1) and steps by one addition. The step after an element is taken lazily, just
/// before the next one, when the subscriber has usually dropped the previous value: the addition then
/// reuses that value's limbs in place instead of allocating.
///
/// **Ownership:** a value type.
///
/// **Thread safety:** value type; not shared.
struct FibonacciGenerator: TermGenerator {
    static var skipChunk: Int { 1_024 }

    /// F(i), the value of the next element unless `stepPending`.
    private var current = BigUInt.zero
    /// F(i+1).
    private var following = BigUInt(1)
    /// Whether `current` was already produced, so the next element is one step further.
    private var stepPending = false

    /// - Complexity: `count` additions of numbers with about 0.209 i / 18 limbs each.
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

    /// - Complexity: one addition.
    mutating func next(index: Int) -> BigUInt? {
        if stepPending { step() }
        stepPending = true
        return current
    }

    private mutating func step() {
        current += following
        swap(&current, &following)
    }
}
