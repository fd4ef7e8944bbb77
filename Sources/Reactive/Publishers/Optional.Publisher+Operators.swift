// Combine's specializations of the operators on `Optional.Publisher`: each computes its result from
// the optional value at once and returns a publisher of it (mostly another `Optional.Publisher`), so
// user code that names those types compiles and the chain builds no operator stages. The closures
// run when the operator is applied, not on subscription. A `nil` publisher is an empty stream: the
// results are what the general operators publish for one, so `allSatisfy` gives `true`,
// `contains` `false`, `count` 0, `collect` `[]` and `reduce` its initial result.

extension Optional.Publisher {
    /// The value transformed at once, if there is one.
    @inlinable
    public func map<T>(_ transform: (Output) -> T) -> Optional<T>.Publisher {
        .init(output.map(transform))
    }

    /// What `transform` makes of the value, if there is one and it makes something.
    @inlinable
    public func compactMap<T>(_ transform: (Output) -> T?) -> Optional<T>.Publisher {
        .init(output.flatMap(transform))
    }

    /// The value if there is one and it satisfies `isIncluded`.
    @inlinable
    public func filter(_ isIncluded: (Output) -> Bool) -> Optional<Output>.Publisher {
        .init(output.flatMap { isIncluded($0) ? $0 : nil })
    }

    /// Whether the value satisfies `predicate`; `true` if there is none.
    @inlinable
    public func allSatisfy(_ predicate: (Output) -> Bool) -> Optional<Bool>.Publisher {
        .init(output.map(predicate) ?? true)
    }

    /// Whether the value satisfies `predicate`; `false` if there is none.
    @inlinable
    public func contains(where predicate: (Output) -> Bool) -> Optional<Bool>.Publisher {
        .init(output.map(predicate) ?? false)
    }

    /// The value in a one-element array, or an empty array.
    @inlinable
    public func collect() -> Optional<[Output]>.Publisher {
        .init(output.map { [$0] } ?? [])
    }

    /// The number of values: 1 or 0.
    @inlinable
    public func count() -> Optional<Int>.Publisher {
        .init(output == nil ? 0 : 1)
    }

    /// The value itself: the smallest of at most one.
    @inlinable
    public func min(by areInIncreasingOrder: (Output, Output) -> Bool) -> Optional<Output>.Publisher {
        self
    }

    /// The value itself: the largest of at most one.
    @inlinable
    public func max(by areInIncreasingOrder: (Output, Output) -> Bool) -> Optional<Output>.Publisher {
        self
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
        .init(output.flatMap { predicate($0) ? nil : $0 })
    }

    /// The value itself: the first of at most one.
    @inlinable
    public func first() -> Optional<Output>.Publisher {
        self
    }

    /// The value if there is one and it satisfies `predicate`.
    @inlinable
    public func first(where predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
        filter(predicate)
    }

    /// The value itself: the last of at most one.
    @inlinable
    public func last() -> Optional<Output>.Publisher {
        self
    }

    /// The value if there is one and it satisfies `predicate`.
    @inlinable
    public func last(where predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
        filter(predicate)
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
        if index < 0 { apiViolation("output index must not be negative, got \(index)") }
        return .init(index == 0 ? output : nil)
    }

    /// The value if `range` holds index 0; nothing otherwise.
    ///
    /// > Warning: A range with a negative lower bound is misuse of the API and traps, as it does for
    /// > any publisher.
    @inlinable
    public func output<R: RangeExpression>(in range: R) -> Optional<Output>.Publisher where R.Bound == Int {
        let indices = range.relative(to: 0..<Int.max)
        if indices.lowerBound < 0 { apiViolation("output range must not be negative, got \(indices)") }
        return .init(indices.contains(0) ? output : nil)
    }

    /// The value if `maxLength` is positive; nothing otherwise.
    ///
    /// > Warning: A negative `maxLength` is misuse of the API and traps, as it does for any publisher.
    @inlinable
    public func prefix(_ maxLength: Int) -> Optional<Output>.Publisher {
        if maxLength < 0 { apiViolation("prefix length must not be negative, got \(maxLength)") }
        return .init(maxLength > 0 ? output : nil)
    }

    /// The value if there is one and it satisfies `predicate`.
    @inlinable
    public func prefix(while predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
        filter(predicate)
    }

    /// `nextPartialResult` of `initialResult` and the value; `initialResult` if there is none.
    @inlinable
    public func reduce<T>(_ initialResult: T, _ nextPartialResult: (T, Output) -> T) -> Optional<T>.Publisher {
        .init(output.map { nextPartialResult(initialResult, $0) } ?? initialResult)
    }

    /// `nextPartialResult` of `initialResult` and the value, if there is one.
    @inlinable
    public func scan<T>(_ initialResult: T, _ nextPartialResult: (T, Output) -> T) -> Optional<T>.Publisher {
        .init(output.map { nextPartialResult(initialResult, $0) })
    }

    /// The value itself: at most one value has no duplicates (`predicate` is not called).
    @inlinable
    public func removeDuplicates(by predicate: (Output, Output) -> Bool) -> Optional<Output>.Publisher {
        self
    }

    /// The publisher itself: an `Optional.Publisher` does not fail.
    @inlinable
    public func replaceError(with output: Output) -> Optional<Output>.Publisher {
        self
    }

    /// The value, or `output` if there is none.
    @inlinable
    public func replaceEmpty(with output: Output) -> Just<Output> {
        .init(self.output ?? output)
    }

    /// The publisher itself: an `Optional.Publisher` does not fail, so there is nothing to retry.
    @inlinable
    public func retry(_ times: Int) -> Optional<Output>.Publisher {
        self
    }
}

extension Optional.Publisher where Output: Comparable {
    /// The value itself: the smallest of at most one.
    @inlinable
    public func min() -> Optional<Output>.Publisher {
        self
    }

    /// The value itself: the largest of at most one.
    @inlinable
    public func max() -> Optional<Output>.Publisher {
        self
    }
}

extension Optional.Publisher where Output: Equatable {
    /// Whether the value equals `output`; `false` if there is none.
    @inlinable
    public func contains(_ output: Output) -> Optional<Bool>.Publisher {
        .init(self.output.map { $0 == output } ?? false)
    }

    /// The value itself: at most one value has no duplicates.
    @inlinable
    public func removeDuplicates() -> Optional<Output>.Publisher {
        self
    }
}
