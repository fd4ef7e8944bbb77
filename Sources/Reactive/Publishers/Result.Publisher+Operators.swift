// Combine's specializations of the operators on `Result.Publisher`: each computes its result from
// the result at once and returns another `Result.Publisher` (or the publisher itself), so user code
// that names those types compiles and the chain builds no operator stages. A failure passes through
// every one of them unchanged (closures are not called with it); the `try` variants widen it to
// `any Error`. The closures run when the operator is applied, not on subscription.
// `ignoreOutput()` is not specialized: Combine's returns an `Empty`, which cannot carry the failure.

extension Result.Publisher {
    /// The success value transformed at once; a failure unchanged.
    @inlinable
    public func map<T>(_ transform: (Output) -> T) -> Result<T, Failure>.Publisher {
        .init(result.map(transform))
    }

    /// The success value transformed at once by a closure that can throw; a failure unchanged.
    @inlinable
    public func tryMap<T>(_ transform: (Output) throws -> T) -> Result<T, any Error>.Publisher {
        .init(widened.flatMap { value in Result<T, any Error> { try transform(value) } })
    }

    /// The failure transformed at once; a success unchanged.
    @inlinable
    public func mapError<E: Error>(_ transform: (Failure) -> E) -> Result<Output, E>.Publisher {
        .init(result.mapError(transform))
    }

    /// Whether the success value satisfies `predicate`; a failure unchanged.
    @inlinable
    public func allSatisfy(_ predicate: (Output) -> Bool) -> Result<Bool, Failure>.Publisher {
        .init(result.map(predicate))
    }

    /// Whether the success value satisfies `predicate`, or the error it throws; a failure unchanged.
    @inlinable
    public func tryAllSatisfy(_ predicate: (Output) throws -> Bool) -> Result<Bool, any Error>.Publisher {
        .init(widened.flatMap { value in Result<Bool, any Error> { try predicate(value) } })
    }

    /// Whether the success value satisfies `predicate`; a failure unchanged.
    @inlinable
    public func contains(where predicate: (Output) -> Bool) -> Result<Bool, Failure>.Publisher {
        .init(result.map(predicate))
    }

    /// Whether the success value satisfies `predicate`, or the error it throws; a failure unchanged.
    @inlinable
    public func tryContains(where predicate: (Output) throws -> Bool) -> Result<Bool, any Error>.Publisher {
        .init(widened.flatMap { value in Result<Bool, any Error> { try predicate(value) } })
    }

    /// The success value in a one-element array; a failure unchanged.
    @inlinable
    public func collect() -> Result<[Output], Failure>.Publisher {
        .init(result.map { [$0] })
    }

    /// One for a success; a failure unchanged.
    @inlinable
    public func count() -> Result<Int, Failure>.Publisher {
        .init(result.map { _ in 1 })
    }

    /// The publisher itself: the smallest of one value.
    @inlinable
    public func min(by areInIncreasingOrder: (Output, Output) -> Bool) -> Result<Output, Failure>.Publisher {
        self
    }

    /// The result as one that can fail with any error (one value; `areInIncreasingOrder` is not called).
    @inlinable
    public func tryMin(
        by areInIncreasingOrder: (Output, Output) throws -> Bool
    ) -> Result<Output, any Error>.Publisher {
        .init(widened)
    }

    /// The publisher itself: the largest of one value.
    @inlinable
    public func max(by areInIncreasingOrder: (Output, Output) -> Bool) -> Result<Output, Failure>.Publisher {
        self
    }

    /// The result as one that can fail with any error (one value; `areInIncreasingOrder` is not called).
    @inlinable
    public func tryMax(
        by areInIncreasingOrder: (Output, Output) throws -> Bool
    ) -> Result<Output, any Error>.Publisher {
        .init(widened)
    }

    /// The publisher itself: the first of one value.
    @inlinable
    public func first() -> Result<Output, Failure>.Publisher {
        self
    }

    /// The publisher itself: the last of one value.
    @inlinable
    public func last() -> Result<Output, Failure>.Publisher {
        self
    }

    /// `nextPartialResult` of `initialResult` and the success value; a failure unchanged.
    @inlinable
    public func reduce<T>(_ initialResult: T, _ nextPartialResult: (T, Output) -> T) -> Result<T, Failure>.Publisher {
        .init(result.map { nextPartialResult(initialResult, $0) })
    }

    /// `nextPartialResult` of `initialResult` and the success value, or the error it throws; a
    /// failure unchanged.
    @inlinable
    public func tryReduce<T>(
        _ initialResult: T,
        _ nextPartialResult: (T, Output) throws -> T
    ) -> Result<T, any Error>.Publisher {
        .init(widened.flatMap { value in Result<T, any Error> { try nextPartialResult(initialResult, value) } })
    }

    /// `nextPartialResult` of `initialResult` and the success value; a failure unchanged.
    @inlinable
    public func scan<T>(_ initialResult: T, _ nextPartialResult: (T, Output) -> T) -> Result<T, Failure>.Publisher {
        reduce(initialResult, nextPartialResult)
    }

    /// `nextPartialResult` of `initialResult` and the success value, or the error it throws; a
    /// failure unchanged.
    @inlinable
    public func tryScan<T>(
        _ initialResult: T,
        _ nextPartialResult: (T, Output) throws -> T
    ) -> Result<T, any Error>.Publisher {
        tryReduce(initialResult, nextPartialResult)
    }

    /// The publisher itself: one value has no duplicates (`predicate` is not called).
    @inlinable
    public func removeDuplicates(by predicate: (Output, Output) -> Bool) -> Result<Output, Failure>.Publisher {
        self
    }

    /// The result as one that can fail with any error (one value has no duplicates; `predicate` is
    /// not called).
    @inlinable
    public func tryRemoveDuplicates(
        by predicate: (Output, Output) throws -> Bool
    ) -> Result<Output, any Error>.Publisher {
        .init(widened)
    }

    /// The success value, or `output` in place of a failure.
    @inlinable
    public func replaceError(with output: Output) -> Result<Output, Never>.Publisher {
        switch result {
        case .success(let value): .init(.success(value))
        case .failure: .init(.success(output))
        }
    }

    /// The publisher itself: a success is never empty, and a failure is not replaced.
    @inlinable
    public func replaceEmpty(with output: Output) -> Result<Output, Failure>.Publisher {
        self
    }

    /// The publisher itself: a resubscription would deliver the same result.
    @inlinable
    public func retry(_ times: Int) -> Result<Output, Failure>.Publisher {
        self
    }

    /// The result with its failure as `any Error`.
    @inlinable
    var widened: Result<Output, any Error> {
        result.mapError { $0 }
    }
}

extension Result.Publisher where Failure == Never {
    /// The success value, as a publisher whose failure type is `E` (it never fails).
    @inlinable
    public func setFailureType<E: Error>(to failureType: E.Type) -> Result<Output, E>.Publisher {
        .init(.success(result.get()))
    }
}

extension Result.Publisher where Output: Equatable {
    /// Whether the success value equals `output`; a failure unchanged.
    @inlinable
    public func contains(_ output: Output) -> Result<Bool, Failure>.Publisher {
        .init(result.map { $0 == output })
    }

    /// The publisher itself: one value has no duplicates.
    @inlinable
    public func removeDuplicates() -> Result<Output, Failure>.Publisher {
        self
    }
}

extension Result.Publisher where Output: Comparable {
    /// The publisher itself: the smallest of one value.
    @inlinable
    public func min() -> Result<Output, Failure>.Publisher {
        self
    }

    /// The publisher itself: the largest of one value.
    @inlinable
    public func max() -> Result<Output, Failure>.Publisher {
        self
    }
}
