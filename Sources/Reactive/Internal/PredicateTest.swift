/// The predicate of an operator that comes as a plain variant and a `try` variant (`first(where:)` and
/// `tryFirst(where:)`, `contains(where:)`, `allSatisfy`, `prefix(while:)`, …): the plain one's failure is
/// upstream's, the `try` one's predicate may throw and its failure is `any Error`. One value answers
/// for both, so that each operator's step is written once.
///
/// **Thread safety:** immutable; the predicate runs on whatever thread calls it.
internal struct PredicateTest<Input, UpstreamFailure: Error, Failure: Error> {
    private let test: (Input) -> Result<Bool, Failure>
    private let convert: (UpstreamFailure) -> Failure

    /// A predicate that cannot throw; upstream's failure passes as it is.
    init(_ predicate: @escaping (Input) -> Bool) where UpstreamFailure == Failure {
        test = { .success(predicate($0)) }
        convert = { $0 }
    }

    /// A predicate that can throw; its error, like upstream's failure, fails the stream as `any Error`.
    init(throwing predicate: @escaping (Input) throws -> Bool) where Failure == any Error {
        test = { input in Result { try predicate(input) } }
        convert = { $0 }
    }

    /// Whether `input` matches, or the predicate's error.
    func callAsFunction(_ input: Input) -> Result<Bool, Failure> { test(input) }

    /// The operator's failure for an upstream failure.
    func failure(from error: UpstreamFailure) -> Failure { convert(error) }
}
