// Combine's specializations of the operators on `Just`: each computes its result from the one value
// at once and returns the simplest publisher of it (a `Just`, an `Optional.Publisher`, a
// `Result.Publisher` or a `Publishers.Sequence`), so user code that names those types compiles and a
// chain on a `Just` builds no operator stages. The closures run when the operator is applied, not
// on subscription. Inlinable: they are applied per element inside `flatMap` closures and the like,
// where an unspecialized call across the module boundary would cost more than the work.

extension Just {
    /// Transforms the value at once; a `Just` of the result, as in Combine.
    ///
    ///     let cancellable = Just(2).map { $0 * 10 }.sink { print($0) }
    ///     // Prints: 20
    @inlinable
    public func map<T>(_ transform: (Output) -> T) -> Just<T> {
        Just<T>(transform(output))
    }

    /// Transforms the value at once with a closure that can throw; the result or the error.
    @inlinable
    public func tryMap<T>(_ transform: (Output) throws -> T) -> Result<T, any Error>.Publisher {
        .init(Result { try transform(output) })
    }

    /// The value, as a publisher whose failure type is `E` (it never fails).
    @inlinable
    public func mapError<E: Error>(_ transform: (Never) -> E) -> Result<Output, E>.Publisher {
        .init(.success(output))
    }

    /// The value, as a publisher whose failure type is `E` (it never fails).
    @inlinable
    public func setFailureType<E: Error>(to failureType: E.Type) -> Result<Output, E>.Publisher {
        .init(.success(output))
    }

    /// The value if `transform` makes something of it; nothing otherwise.
    @inlinable
    public func compactMap<T>(_ transform: (Output) -> T?) -> Optional<T>.Publisher {
        .init(transform(output))
    }

    /// The value if it satisfies `isIncluded`; nothing otherwise.
    @inlinable
    public func filter(_ isIncluded: (Output) -> Bool) -> Optional<Output>.Publisher {
        .init(isIncluded(output) ? output : nil)
    }

    /// Whether the value satisfies `predicate`.
    @inlinable
    public func allSatisfy(_ predicate: (Output) -> Bool) -> Just<Bool> {
        .init(predicate(output))
    }

    /// Whether the value satisfies `predicate`, or the error it throws.
    @inlinable
    public func tryAllSatisfy(_ predicate: (Output) throws -> Bool) -> Result<Bool, any Error>.Publisher {
        .init(Result { try predicate(output) })
    }

    /// Whether the value satisfies `predicate`.
    @inlinable
    public func contains(where predicate: (Output) -> Bool) -> Just<Bool> {
        .init(predicate(output))
    }

    /// Whether the value satisfies `predicate`, or the error it throws.
    @inlinable
    public func tryContains(where predicate: (Output) throws -> Bool) -> Result<Bool, any Error>.Publisher {
        .init(Result { try predicate(output) })
    }

    /// The value in a one-element array.
    @inlinable
    public func collect() -> Just<[Output]> {
        .init([output])
    }

    /// One: the number of values a `Just` publishes.
    @inlinable
    public func count() -> Just<Int> {
        .init(1)
    }

    /// The value itself: the smallest of one.
    @inlinable
    public func min(by areInIncreasingOrder: (Output, Output) -> Bool) -> Just<Output> {
        self
    }

    /// The value itself: the largest of one.
    @inlinable
    public func max(by areInIncreasingOrder: (Output, Output) -> Bool) -> Just<Output> {
        self
    }

    /// `elements`, then the value.
    @inlinable
    public func prepend(_ elements: Output...) -> Publishers.Sequence<[Output], Never> {
        prepend(elements)
    }

    /// `elements`, then the value.
    @inlinable
    public func prepend<S: Sequence>(_ elements: S) -> Publishers.Sequence<[Output], Never> where S.Element == Output {
        var all = Array(elements)
        all.append(output)
        return .init(sequence: all)
    }

    /// The value, then `elements`.
    @inlinable
    public func append(_ elements: Output...) -> Publishers.Sequence<[Output], Never> {
        append(elements)
    }

    /// The value, then `elements`.
    @inlinable
    public func append<S: Sequence>(_ elements: S) -> Publishers.Sequence<[Output], Never> where S.Element == Output {
        var all = [output]
        all.append(contentsOf: elements)
        return .init(sequence: all)
    }

    /// Nothing if `count` is positive; the value otherwise.
    ///
    /// > Warning: A negative `count` is misuse of the API and traps, as it does for any publisher.
    @inlinable
    public func dropFirst(_ count: Int = 1) -> Optional<Output>.Publisher {
        if count < 0 { apiViolation("dropFirst count must not be negative, got \(count)") }
        return .init(count > 0 ? nil : output)
    }

    /// Nothing if the value satisfies `predicate`; the value otherwise.
    @inlinable
    public func drop(while predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
        .init(predicate(output) ? nil : output)
    }

    /// The value itself: the first of one.
    @inlinable
    public func first() -> Just<Output> {
        self
    }

    /// The value if it satisfies `predicate`; nothing otherwise.
    @inlinable
    public func first(where predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
        .init(predicate(output) ? output : nil)
    }

    /// The value itself: the last of one.
    @inlinable
    public func last() -> Just<Output> {
        self
    }

    /// The value if it satisfies `predicate`; nothing otherwise.
    @inlinable
    public func last(where predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
        .init(predicate(output) ? output : nil)
    }

    /// No value; the completion only.
    @inlinable
    public func ignoreOutput() -> Empty<Output, Never> {
        Empty()
    }

    /// The value if `index` is 0; nothing otherwise.
    ///
    /// > Warning: A negative `index` is misuse of the API and traps, as it does for any publisher.
    @inlinable
    public func output(at index: Int) -> Optional<Output>.Publisher {
        Optional.Publisher(output).output(at: index)
    }

    /// The value if `range` holds index 0; nothing otherwise.
    ///
    /// > Warning: A range with a negative lower bound is misuse of the API and traps, as it does for
    /// > any publisher.
    @inlinable
    public func output<R: RangeExpression>(in range: R) -> Optional<Output>.Publisher where R.Bound == Int {
        Optional.Publisher(output).output(in: range)
    }

    /// The value if `maxLength` is positive; nothing otherwise.
    ///
    /// > Warning: A negative `maxLength` is misuse of the API and traps, as it does for any publisher.
    @inlinable
    public func prefix(_ maxLength: Int) -> Optional<Output>.Publisher {
        Optional.Publisher(output).prefix(maxLength)
    }

    /// The value if it satisfies `predicate`; nothing otherwise.
    @inlinable
    public func prefix(while predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
        .init(predicate(output) ? output : nil)
    }

    /// `nextPartialResult` of `initialResult` and the value.
    @inlinable
    public func reduce<T>(_ initialResult: T, _ nextPartialResult: (T, Output) -> T) -> Result<T, Never>.Publisher {
        .init(.success(nextPartialResult(initialResult, output)))
    }

    /// `nextPartialResult` of `initialResult` and the value, or the error it throws.
    @inlinable
    public func tryReduce<T>(
        _ initialResult: T,
        _ nextPartialResult: (T, Output) throws -> T
    ) -> Result<T, any Error>.Publisher {
        .init(Result { try nextPartialResult(initialResult, output) })
    }

    /// `nextPartialResult` of `initialResult` and the value: the one intermediate result.
    @inlinable
    public func scan<T>(_ initialResult: T, _ nextPartialResult: (T, Output) -> T) -> Result<T, Never>.Publisher {
        reduce(initialResult, nextPartialResult)
    }

    /// `nextPartialResult` of `initialResult` and the value, or the error it throws.
    @inlinable
    public func tryScan<T>(
        _ initialResult: T,
        _ nextPartialResult: (T, Output) throws -> T
    ) -> Result<T, any Error>.Publisher {
        tryReduce(initialResult, nextPartialResult)
    }

    /// The value itself: one value has no duplicates (`predicate` is not called).
    @inlinable
    public func removeDuplicates(by predicate: (Output, Output) -> Bool) -> Just<Output> {
        self
    }

    /// The value, as a publisher that can fail (one value has no duplicates; `predicate` is not called).
    @inlinable
    public func tryRemoveDuplicates(
        by predicate: (Output, Output) throws -> Bool
    ) -> Result<Output, any Error>.Publisher {
        .init(.success(output))
    }

    /// The value itself: a `Just` does not fail.
    @inlinable
    public func replaceError(with output: Output) -> Just<Output> {
        self
    }

    /// The value itself: a `Just` is never empty.
    @inlinable
    public func replaceEmpty(with output: Output) -> Just<Output> {
        self
    }

    /// The value itself: a `Just` does not fail, so there is nothing to retry.
    @inlinable
    public func retry(_ times: Int) -> Just<Output> {
        self
    }
}

extension Just where Output: Comparable {
    /// The value itself: the smallest of one.
    @inlinable
    public func min() -> Just<Output> {
        self
    }

    /// The value itself: the largest of one.
    @inlinable
    public func max() -> Just<Output> {
        self
    }
}

extension Just where Output: Equatable {
    /// Whether the value equals `output`.
    @inlinable
    public func contains(_ output: Output) -> Just<Bool> {
        .init(self.output == output)
    }

    /// The value itself: one value has no duplicates.
    @inlinable
    public func removeDuplicates() -> Just<Output> {
        self
    }
}
