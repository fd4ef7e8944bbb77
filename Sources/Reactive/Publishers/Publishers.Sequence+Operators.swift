// Combine's specializations of the operators on a sequence publisher: each computes its result from
// the sequence at once and returns a publisher of the result (a `Publishers.Sequence`, a
// `Result.Publisher` or an `Optional.Publisher`), so user code that names those types compiles.
// As in Combine, `map`, `filter`, `scan` and the like walk the whole sequence when they are
// applied: do not apply them to an endless sequence (use `dropFirst`/`prefix`, which stay lazy, or
// erase the publisher first).

extension Publishers.Sequence {
    /// Transforms every element of the sequence at once; a sequence publisher of the results.
    public func map<T>(_ transform: (Elements.Element) -> T) -> Publishers.Sequence<[T], Failure> {
        .init(sequence: sequence.map(transform))
    }

    /// Keeps the elements that satisfy `isIncluded`; a sequence publisher of them.
    public func filter(_ isIncluded: (Elements.Element) -> Bool) -> Publishers.Sequence<[Elements.Element], Failure> {
        .init(sequence: sequence.filter(isIncluded))
    }

    /// The non-`nil` results of `transform`; a sequence publisher of them.
    public func compactMap<T>(_ transform: (Elements.Element) -> T?) -> Publishers.Sequence<[T], Failure> {
        .init(sequence: sequence.compactMap(transform))
    }

    /// Every intermediate result of folding the sequence; a sequence publisher of them.
    public func scan<T>(
        _ initialResult: T,
        _ nextPartialResult: @escaping (T, Elements.Element) -> T
    ) -> Publishers.Sequence<[T], Failure> {
        var accumulator = initialResult
        return .init(
            sequence: sequence.map {
                accumulator = nextPartialResult(accumulator, $0)
                return accumulator
            }
        )
    }

    /// Replaces `nil` elements with `output`.
    public func replaceNil<T>(with output: T) -> Publishers.Sequence<[Elements.Element], Failure>
    where Elements.Element == T? {
        .init(sequence: sequence.map { $0 ?? output })
    }

    /// The same sequence with another failure type.
    public func setFailureType<E: Error>(to error: E.Type) -> Publishers.Sequence<Elements, E> {
        .init(sequence: sequence)
    }

    /// Omits the first `count` elements, lazily.
    public func dropFirst(_ count: Int = 1) -> Publishers.Sequence<DropFirstSequence<Elements>, Failure> {
        .init(sequence: sequence.dropFirst(Swift.max(0, count)))
    }

    /// Omits elements while `predicate` holds, lazily.
    public func drop(
        while predicate: @escaping (Elements.Element) -> Bool
    ) -> Publishers.Sequence<DropWhileSequence<Elements>, Failure> {
        .init(sequence: sequence.drop(while: predicate))
    }

    /// Keeps at most the first `maxLength` elements, lazily.
    public func prefix(_ maxLength: Int) -> Publishers.Sequence<PrefixSequence<Elements>, Failure> {
        .init(sequence: sequence.prefix(Swift.max(0, maxLength)))
    }

    /// Keeps the elements up to the first that does not satisfy `predicate`.
    public func prefix(
        while predicate: (Elements.Element) -> Bool
    ) -> Publishers.Sequence<[Elements.Element], Failure> {
        .init(sequence: Array(sequence.prefix(while: predicate)))
    }

    /// All elements in one array.
    public func collect() -> Result<[Elements.Element], Failure>.Publisher {
        .init(.success(Array(sequence)))
    }

    /// The sequence folded into one value.
    public func reduce<T>(
        _ initialResult: T,
        _ nextPartialResult: @escaping (T, Elements.Element) -> T
    ) -> Result<T, Failure>.Publisher {
        .init(.success(sequence.reduce(initialResult, nextPartialResult)))
    }

    /// The sequence folded into one value by a closure that can throw.
    public func tryReduce<T>(
        _ initialResult: T,
        _ nextPartialResult: @escaping (T, Elements.Element) throws -> T
    ) -> Result<T, any Error>.Publisher {
        .init(Result { try sequence.reduce(initialResult, nextPartialResult) })
    }

    /// Whether any element satisfies `predicate`.
    public func contains(where predicate: (Elements.Element) -> Bool) -> Result<Bool, Failure>.Publisher {
        .init(.success(sequence.contains(where: predicate)))
    }

    /// Whether every element satisfies `predicate`.
    public func allSatisfy(_ predicate: (Elements.Element) -> Bool) -> Result<Bool, Failure>.Publisher {
        .init(.success(sequence.allSatisfy(predicate)))
    }

    /// No elements; the completion only.
    public func ignoreOutput() -> Empty<Elements.Element, Failure> {
        Empty()
    }
}

extension Publishers.Sequence where Elements.Element: Equatable {
    /// The elements that differ from the one before them.
    public func removeDuplicates() -> Publishers.Sequence<[Elements.Element], Failure> {
        var result: [Elements.Element] = []
        for element in sequence where result.last != element {
            result.append(element)
        }
        return .init(sequence: result)
    }

    /// Whether the sequence contains `output`.
    public func contains(_ output: Elements.Element) -> Result<Bool, Failure>.Publisher {
        .init(.success(sequence.contains(output)))
    }
}

extension Publishers.Sequence where Failure == Never {
    /// The first element that satisfies `predicate`, if any.
    public func first(where predicate: (Elements.Element) -> Bool) -> Optional<Elements.Element>.Publisher {
        .init(sequence.first(where: predicate))
    }

    /// The smallest element by `areInIncreasingOrder`, if any.
    public func min(
        by areInIncreasingOrder: (Elements.Element, Elements.Element) -> Bool
    ) -> Optional<Elements.Element>.Publisher {
        .init(sequence.min(by: areInIncreasingOrder))
    }

    /// The largest element by `areInIncreasingOrder`, if any.
    public func max(
        by areInIncreasingOrder: (Elements.Element, Elements.Element) -> Bool
    ) -> Optional<Elements.Element>.Publisher {
        .init(sequence.max(by: areInIncreasingOrder))
    }
}

extension Publishers.Sequence where Failure == Never, Elements.Element: Comparable {
    /// The smallest element, if any.
    public func min() -> Optional<Elements.Element>.Publisher {
        .init(sequence.min())
    }

    /// The largest element, if any.
    public func max() -> Optional<Elements.Element>.Publisher {
        .init(sequence.max())
    }
}

extension Publishers.Sequence where Elements: Collection, Failure == Never {
    /// The first element, if any.
    public func first() -> Optional<Elements.Element>.Publisher {
        .init(sequence.first)
    }

    /// The element at `index` (counted from the start), if there is one.
    public func output(at index: Int) -> Optional<Elements.Element>.Publisher {
        guard index >= 0 else { return .init(nil) }
        return .init(sequence.dropFirst(index).first)
    }
}

extension Publishers.Sequence where Elements: Collection {
    /// The number of elements.
    public func count() -> Result<Int, Failure>.Publisher {
        .init(.success(sequence.count))
    }

    /// The elements at the positions in `range` (counted from the start).
    public func output(in range: Range<Int>) -> Publishers.Sequence<[Elements.Element], Failure> {
        let lower = Swift.max(0, range.lowerBound)
        let upper = Swift.max(lower, range.upperBound)
        return .init(sequence: Array(sequence.dropFirst(lower).prefix(upper - lower)))
    }
}

extension Publishers.Sequence where Elements: BidirectionalCollection, Failure == Never {
    /// The last element, if any.
    public func last() -> Optional<Elements.Element>.Publisher {
        .init(sequence.last)
    }

    /// The last element that satisfies `predicate`, if any.
    public func last(where predicate: (Elements.Element) -> Bool) -> Optional<Elements.Element>.Publisher {
        .init(sequence.last(where: predicate))
    }
}

extension Just {
    /// Transforms the value at once; a `Just` of the result, as in Combine.
    ///
    ///     let cancellable = Just(2).map { $0 * 10 }.sink { print($0) }
    ///     // Prints: 20
    public func map<T>(_ transform: (Output) -> T) -> Just<T> {
        Just<T>(transform(output))
    }
}
