/// The reduction of the operators that search the stream with a predicate: `first` and `last` (whose
/// answer is an element), `contains` and `allSatisfy` (whose answer is a `Bool`), each in its plain,
/// `where` and `try` forms. They differ only in which test result decides, what a deciding element
/// answers and what an exhausted stream answers; the four factories below say it for each.
///
/// A predicate's error fails the stream at once (``ReducerInner`` cancels upstream), whatever the
/// search.
///
/// **Thread safety:** value type, owned by one ``ReducerInner`` and touched only on the upstream's
/// serialized `receive` path.
internal struct SearchReduction<Input, Output, UpstreamFailure: Error, Failure: Error>: Reduction {
    let name: String
    private let test: PredicateTest<Input, UpstreamFailure, Failure>
    /// The test result that ends the search at the element that gives it (`true`: a match, `false`: a
    /// miss); `nil` searches to the end and keeps the latest match.
    private let decidesOn: Bool?
    /// What the deciding element (or the latest match) answers.
    private let answer: (Input) -> Output
    /// What a stream that ends undecided answers; `nil` finishes without a value.
    private let undecided: Output?
    /// The latest match's answer, when the search runs to the end.
    private var latest: Output?

    private init(
        name: String,
        test: PredicateTest<Input, UpstreamFailure, Failure>,
        decidesOn: Bool?,
        answer: @escaping (Input) -> Output,
        undecided: Output?
    ) {
        self.name = name
        self.test = test
        self.decidesOn = decidesOn
        self.answer = answer
        self.undecided = undecided
    }

    mutating func reduce(_ input: Input) -> ReductionStep<Output, Failure> {
        switch test(input) {
        case .failure(let error):
            return .fail(error)
        case .success(let matched) where matched == decidesOn:
            return .finish(answer(input))
        case .success(true) where decidesOn == nil:
            latest = answer(input)
            return .continue
        case .success:
            return .continue
        }
    }

    mutating func resultOnFinish() -> Output? { latest.take() ?? undecided }

    func failure(from error: UpstreamFailure) -> Failure { test.failure(from: error) }
}

extension SearchReduction where Output == Input {
    /// `first`: the first match, at once (cancelling upstream); nothing if no element matches.
    static func first(_ name: String, _ test: PredicateTest<Input, UpstreamFailure, Failure>) -> Self {
        Self(name: name, test: test, decidesOn: true, answer: { $0 }, undecided: nil)
    }

    /// `last`: the latest match, when upstream finishes; nothing if no element matched.
    static func last(_ name: String, _ test: PredicateTest<Input, UpstreamFailure, Failure>) -> Self {
        Self(name: name, test: test, decidesOn: nil, answer: { $0 }, undecided: nil)
    }
}

extension SearchReduction where Output == Bool {
    /// `contains`: `true` at the first match (cancelling upstream), `false` if upstream finishes first.
    static func contains(_ name: String, _ test: PredicateTest<Input, UpstreamFailure, Failure>) -> Self {
        Self(name: name, test: test, decidesOn: true, answer: { _ in true }, undecided: false)
    }

    /// `allSatisfy`: `false` at the first miss (cancelling upstream), `true` if upstream finishes first.
    static func allSatisfy(_ name: String, _ test: PredicateTest<Input, UpstreamFailure, Failure>) -> Self {
        Self(name: name, test: test, decidesOn: false, answer: { _ in false }, undecided: true)
    }
}
