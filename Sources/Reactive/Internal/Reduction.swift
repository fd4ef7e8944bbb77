// `ReducerInner` runs a `Reduction`: requests unlimited upstream, folds every value, and delivers one
// result when upstream finishes (or the reduction ends early), holding it until downstream has demand.
// `reduce`, `count`, `first`, `contains`, `min`, … use it (as Combine's own reducers share one base).

/// What a reducing operator does with each value; ``ReducerInner`` does the rest.
///
/// **Thread safety:** value type, owned by one ``ReducerInner`` and touched only on the
/// upstream's serialized `receive` path.
internal protocol Reduction {
    associatedtype Input
    associatedtype Output
    associatedtype UpstreamFailure: Error
    associatedtype Failure: Error

    /// The operator's name; the description of its subscription.
    var name: String { get }

    /// Folds one value in. Runs outside any lock.
    mutating func reduce(_ input: Input) -> ReductionStep<Output, Failure>

    /// The value to deliver when upstream finishes normally; `nil` finishes without one.
    mutating func resultOnFinish() -> Output?

    /// The operator's failure for an upstream failure.
    func failure(from error: UpstreamFailure) -> Failure
}

extension Reduction where UpstreamFailure == Failure {
    func failure(from error: UpstreamFailure) -> Failure { error }
}

/// What a ``Reduction`` decided about one value.
internal enum ReductionStep<Output, Failure: Error> {
    /// Keep going.
    case `continue`
    /// Stop now: cancel upstream, deliver the value if any, and finish.
    case finish(Output?)
    /// Stop now: cancel upstream and fail.
    case fail(Failure)
}
