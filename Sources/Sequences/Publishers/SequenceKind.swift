/// The sequences Spout can stream, by the name a client uses in a URL.
///
/// **Ownership:** a value type.
///
/// **Thread safety:** value type; not shared.
public enum SequenceKind: String, CaseIterable, Sendable {
    /// F(0) = 0, F(1) = 1, F(n) = F(n-1) + F(n-2), exact.
    case fibonacci
    /// 0, 1, 2, …: the value is the index.
    case naturals
    /// 2, 3, 5, 7, …: the n-th prime (0-based) at index n.
    case primes
    /// 0! = 1, 1! = 1, 2! = 2, 6, 24, …: n! at index n, exact.
    case factorial

    /// A one-line description for a listing of the sequences.
    public var summary: String {
        switch self {
        case .fibonacci: "Fibonacci numbers, exact: F(0) = 0, F(1) = 1, then 1, 2, 3, 5, 8, …"
        case .naturals: "natural numbers: 0, 1, 2, 3, … (the value is the index)"
        case .primes: "prime numbers, the n-th prime at index n: 2, 3, 5, 7, 11, …"
        case .factorial: "factorials, exact: n! at index n: 1, 1, 2, 6, 24, 120, …"
        }
    }

    /// The largest `start` a service should accept: reaching it costs at most about a quarter of a
    /// second of one core in a release build (measured with `sequences-bench`: fibonacci 0.26 s,
    /// primes 0.10-0.13 s, factorial 0.035 s).
    ///
    /// The publishers accept any non-negative `start`; past this bound the first element merely takes
    /// longer (the work before it is cancellable, checked every few hundred elements). The costs of
    /// reaching `start = s`, and of each element after it:
    /// - naturals: O(1); a few nanoseconds per element.
    /// - fibonacci: s big-integer additions, O(s²) digit work in all (F(s) has about 0.209 s digits);
    ///   each element is one addition.
    /// - primes: a segmented sieve up to the s-th prime (about s ln s), O(√p) memory;
    ///   a few nanoseconds per element.
    /// - factorial: s multiplications by a machine word, O(s² log s) digit work in all
    ///   (s! has about s log10(s/e) digits); each element is one multiplication.
    public var maxStart: Int {
        switch self {
        case .fibonacci: 100_000
        case .naturals: Int.max
        case .primes: 10_000_000
        case .factorial: 10_000
        }
    }

    /// The name used in debug descriptions, e.g. "Fibonacci".
    var displayName: String {
        switch self {
        case .fibonacci: "Fibonacci"
        case .naturals: "Naturals"
        case .primes: "Primes"
        case .factorial: "Factorial"
        }
    }
}
