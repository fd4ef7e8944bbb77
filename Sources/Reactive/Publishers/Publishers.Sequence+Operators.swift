// Combine's specializations of the operators on a sequence publisher: each computes its result from
// the sequence at once and returns a publisher of the result (a `Publishers.Sequence`, a
// `Result.Publisher` or an `Optional.Publisher`), so user code that names those types compiles.
// As in Combine, `map`, `filter`, `scan` and the like walk the whole sequence when they are
// applied: do not apply them to an endless sequence (use `dropFirst`/`prefix`, which stay lazy, or
// erase the publisher first). Inlinable, so that the walk is specialized for the caller's sequence
// and closure rather than run through generic calls.

extension Publishers.Sequence {
    /// Transforms every element of the sequence at once; a sequence publisher of the results.
    @inlinable
    public func map<T>(_ transform: (Elements.Element) -> T) -> Publishers.Sequence<[T], Failure> {
        .init(sequence: sequence.map(transform))
    }

    /// Keeps the elements that satisfy `isIncluded`; a sequence publisher of them.
    @inlinable
    public func filter(_ isIncluded: (Elements.Element) -> Bool) -> Publishers.Sequence<[Elements.Element], Failure> {
        .init(sequence: sequence.filter(isIncluded))
    }

    /// The non-`nil` results of `transform`; a sequence publisher of them.
    @inlinable
    public func compactMap<T>(_ transform: (Elements.Element) -> T?) -> Publishers.Sequence<[T], Failure> {
        .init(sequence: sequence.compactMap(transform))
    }

    /// Every intermediate result of folding the sequence; a sequence publisher of them.
    @inlinable
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
    @inlinable
    public func replaceNil<T>(with output: T) -> Publishers.Sequence<[Elements.Element], Failure>
    where Elements.Element == T? {
        .init(sequence: sequence.map { $0 ?? output })
    }

    /// The same sequence with another failure type.
    @inlinable
    public func setFailureType<E: Error>(to error: E.Type) -> Publishers.Sequence<Elements, E> {
        .init(sequence: sequence)
    }

    /// Omits the first `count` elements, lazily.
    @inlinable
    public func dropFirst(_ count: Int = 1) -> Publishers.Sequence<DropFirstSequence<Elements>, Failure> {
        .init(sequence: sequence.dropFirst(Swift.max(0, count)))
    }

    /// Omits elements while `predicate` holds, lazily.
    @inlinable
    public func drop(
        while predicate: @escaping (Elements.Element) -> Bool
    ) -> Publishers.Sequence<DropWhileSequence<Elements>, Failure> {
        .init(sequence: sequence.drop(while: predicate))
    }

    /// Keeps at most the first `maxLength` elements, lazily.
    @inlinable
    public func prefix(_ maxLength: Int) -> Publishers.Sequence<PrefixSequence<Elements>, Failure> {
        .init(sequence: sequence.prefix(Swift.max(0, maxLength)))
    }

    /// Keeps the elements up to the first that does not satisfy `predicate`.
    @inlinable
    public func prefix(
        while predicate: (Elements.Element) -> Bool
    ) -> Publishers.Sequence<[Elements.Element], Failure> {
        .init(sequence: Array(sequence.prefix(while: predicate)))
    }

    /// All elements in one array.
    @inlinable
    public func collect() -> Result<[Elements.Element], Failure>.Publisher {
        .init(.success(Array(sequence)))
    }

    /// The sequence folded into one value.
    @inlinable
    public func reduce<T>(
        _ initialResult: T,
        _ nextPartialResult: @escaping (T, Elements.Element) -> T
    ) -> Result<T, Failure>.Publisher {
        .init(.success(sequence.reduce(initialResult, nextPartialResult)))
    }

    /// The sequence folded into one value by a closure that can throw.
    @inlinable
    public func tryReduce<T>(
        _ initialResult: T,
        _ nextPartialResult: @escaping (T, Elements.Element) throws -> T
    ) -> Result<T, any Error>.Publisher {
        .init(Result { try sequence.reduce(initialResult, nextPartialResult) })
    }

    /// Whether any element satisfies `predicate`.
    @inlinable
    public func contains(where predicate: (Elements.Element) -> Bool) -> Result<Bool, Failure>.Publisher {
        .init(.success(sequence.contains(where: predicate)))
    }

    /// Whether every element satisfies `predicate`.
    @inlinable
    public func allSatisfy(_ predicate: (Elements.Element) -> Bool) -> Result<Bool, Failure>.Publisher {
        .init(.success(sequence.allSatisfy(predicate)))
    }

    /// Whether every element satisfies `predicate`, or the error it throws.
    @inlinable
    public func tryAllSatisfy(_ predicate: (Elements.Element) throws -> Bool) -> Result<Bool, any Error>.Publisher {
        .init(Result { try sequence.allSatisfy(predicate) })
    }

    /// Whether any element satisfies `predicate`, or the error it throws.
    @inlinable
    public func tryContains(where predicate: (Elements.Element) throws -> Bool) -> Result<Bool, any Error>.Publisher {
        .init(Result { try sequence.contains(where: predicate) })
    }

    /// No elements; the completion only.
    @inlinable
    public func ignoreOutput() -> Empty<Elements.Element, Failure> {
        Empty()
    }
}

extension Publishers.Sequence where Elements.Element: Equatable {
    /// The elements that differ from the one before them.
    @inlinable
    public func removeDuplicates() -> Publishers.Sequence<[Elements.Element], Failure> {
        var result: [Elements.Element] = []
        for element in sequence where result.last != element {
            result.append(element)
        }
        return .init(sequence: result)
    }

    /// Whether the sequence contains `output`.
    @inlinable
    public func contains(_ output: Elements.Element) -> Result<Bool, Failure>.Publisher {
        .init(.success(sequence.contains(output)))
    }
}

extension Publishers.Sequence where Failure == Never {
    /// The first element that satisfies `predicate`, if any.
    @inlinable
    public func first(where predicate: (Elements.Element) -> Bool) -> Optional<Elements.Element>.Publisher {
        .init(sequence.first(where: predicate))
    }

    /// The smallest element by `areInIncreasingOrder`, if any.
    @inlinable
    public func min(
        by areInIncreasingOrder: (Elements.Element, Elements.Element) -> Bool
    ) -> Optional<Elements.Element>.Publisher {
        .init(sequence.min(by: areInIncreasingOrder))
    }

    /// The largest element by `areInIncreasingOrder`, if any.
    @inlinable
    public func max(
        by areInIncreasingOrder: (Elements.Element, Elements.Element) -> Bool
    ) -> Optional<Elements.Element>.Publisher {
        .init(sequence.max(by: areInIncreasingOrder))
    }
}

extension Publishers.Sequence where Failure == Never, Elements.Element: Comparable {
    /// The smallest element, if any.
    @inlinable
    public func min() -> Optional<Elements.Element>.Publisher {
        .init(sequence.min())
    }

    /// The largest element, if any.
    @inlinable
    public func max() -> Optional<Elements.Element>.Publisher {
        .init(sequence.max())
    }
}

extension Publishers.Sequence where Elements: Collection, Failure == Never {
    /// The first element, if any.
    @inlinable
    public func first() -> Optional<Elements.Element>.Publisher {
        .init(sequence.first)
    }

    /// The element at `index` (counted from the start), if there is one.
    @inlinable
    public func output(at index: Int) -> Optional<Elements.Element>.Publisher {
        guard index >= 0 else { return .init(nil) }
        return .init(sequence.dropFirst(index).first)
    }
}

extension Publishers.Sequence where Elements: Collection {
    /// The number of elements.
    @inlinable
    public func count() -> Result<Int, Failure>.Publisher {
        .init(.success(sequence.count))
    }

    /// The elements at the positions in `range` (counted from the start).
    @inlinable
    public func output(in range: Range<Int>) -> Publishers.Sequence<[Elements.Element], Failure> {
        let lower = Swift.max(0, range.lowerBound)
        let upper = Swift.max(lower, range.upperBound)
        return .init(sequence: Array(sequence.dropFirst(lower).prefix(upper - lower)))
    }
}

extension Publishers.Sequence where Elements: BidirectionalCollection, Failure == Never {
    /// The last element, if any.
    @inlinable
    public func last() -> Optional<Elements.Element>.Publisher {
        .init(sequence.last)
    }

    /// The last element that satisfies `predicate`, if any.
    @inlinable
    public func last(where predicate: (Elements.Element) -> Bool) -> Optional<Elements.Element>.Publisher {
        .init(sequence.last(where: predicate))
    }
}

extension Publishers.Sequence where Elements: RandomAccessCollection, Failure == Never {
    /// The number of elements, as a `Just` (counted in constant time).
    @inlinable
    public func count() -> Just<Int> {
        Just(sequence.count)
    }
}

extension Publishers.Sequence where Elements: RangeReplaceableCollection {
    /// `elements`, then the sequence's own.
    @inlinable
    public func prepend(_ elements: Output...) -> Publishers.Sequence<Elements, Failure> {
        prepend(elements)
    }

    /// `elements`, then the sequence's own.
    @inlinable
    public func prepend<S: Swift.Sequence>(_ elements: S) -> Publishers.Sequence<Elements, Failure>
    where S.Element == Elements.Element {
        var all = Elements(elements)
        all.append(contentsOf: sequence)
        return .init(sequence: all)
    }

    /// `publisher`'s elements, then the sequence's own.
    @inlinable
    public func prepend(_ publisher: Publishers.Sequence<Elements, Failure>) -> Publishers.Sequence<Elements, Failure> {
        prepend(publisher.sequence)
    }

    /// The sequence's elements, then `elements`.
    @inlinable
    public func append(_ elements: Output...) -> Publishers.Sequence<Elements, Failure> {
        append(elements)
    }

    /// The sequence's elements, then `elements`.
    @inlinable
    public func append<S: Swift.Sequence>(_ elements: S) -> Publishers.Sequence<Elements, Failure>
    where S.Element == Elements.Element {
        var all = sequence
        all.append(contentsOf: elements)
        return .init(sequence: all)
    }

    /// The sequence's elements, then `publisher`'s.
    @inlinable
    public func append(_ publisher: Publishers.Sequence<Elements, Failure>) -> Publishers.Sequence<Elements, Failure> {
        append(publisher.sequence)
    }
}
