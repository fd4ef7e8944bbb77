import Reactive
import TestSupport
import Testing

/// Combine's specializations of the operators on `Just`, `Optional.Publisher`, `Result.Publisher` and
/// `Publishers.Sequence` (issue 27): each is named by its return type (the annotation does not compile
/// without the specialization) and checked to publish what the general operator publishes for the
/// same stream (applied after `eraseToAnyPublisher()`, where no specialization applies).
@Suite struct SpecializationTests {
    struct Boom: Error, Equatable {}

    /// The transform from `Never`, which is never called.
    static func absurd(_ never: Never) -> Boom {}

    /// What `publisher` delivers to a subscriber asking for everything: each value, then the completion.
    func events<P: Publisher>(_ publisher: P) -> [String] {
        let subscriber = TrackingSubscriber<P.Output, P.Failure>()
        publisher.subscribe(subscriber)
        return subscriber.history.compactMap { event in
            switch event {
            case .subscription: nil
            case .value(let value): "\(value)"
            case .completion(.finished): "finished"
            case .completion(.failure(let error)): "failure(\(error))"
            }
        }
    }

    /// Expects `specialized` and `general` to deliver the same events. A function rather than an
    /// `#expect` over both calls, so that the operators' closures are type-checked outside the macro.
    func expectAgree<A: Publisher, B: Publisher>(
        _ specialized: A,
        _ general: B,
        _ comment: Comment? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let expected = events(general)
        let actual = events(specialized)
        #expect(actual == expected, comment, sourceLocation: sourceLocation)
    }

    // MARK: Just

    @Test func justTransformsReturnJustOptionalOrResultPublishers() {
        let just = Just(3)
        let general = just.eraseToAnyPublisher()

        let mapped: Just<String> = just.map { "\($0)" }
        #expect(mapped.output == "3")
        let tried: Result<Int, any Error>.Publisher = just.tryMap { $0 * 2 }
        expectAgree(tried, general.tryMap { $0 * 2 })
        let thrown: Result<Int, any Error>.Publisher = just.tryMap { _ in throw Boom() }
        expectAgree(thrown, general.tryMap { _ -> Int in throw Boom() })
        #expect(events(thrown) == ["failure(Boom())"])
        let failing: Result<Int, Boom>.Publisher = just.setFailureType(to: Boom.self)
        #expect(failing.result == .success(3))
        let mappedError: Result<Int, Boom>.Publisher = just.mapError(Self.absurd)
        #expect(mappedError.result == .success(3))

        let kept: Optional<Int>.Publisher = just.filter { $0 > 0 }
        let dropped: Optional<Int>.Publisher = just.filter { $0 > 5 }
        #expect(kept.output == 3)
        #expect(dropped.output == nil)
        expectAgree(dropped, general.filter { $0 > 5 })
        let compact: Optional<String>.Publisher = just.compactMap { $0 > 0 ? "\($0)" : nil }
        #expect(compact.output == "3")
        #expect(just.compactMap { $0 > 5 ? $0 : nil }.output == nil)
    }

    @Test func justFoldsReturnJustOrResultPublishers() {
        let just = Just(3)
        let general = just.eraseToAnyPublisher()

        let all: Just<Bool> = just.allSatisfy { $0 > 5 }
        let any: Just<Bool> = just.contains { $0 == 3 }
        let equal: Just<Bool> = just.contains(4)
        #expect(all.output == false)
        #expect(any.output == true)
        #expect(equal.output == false)
        expectAgree(all, general.allSatisfy { $0 > 5 })
        let tryAll: Result<Bool, any Error>.Publisher = just.tryAllSatisfy { $0 > 0 }
        let tryAny: Result<Bool, any Error>.Publisher = just.tryContains { _ in throw Boom() }
        expectAgree(tryAll, general.tryAllSatisfy { $0 > 0 })
        expectAgree(tryAny, general.tryContains { _ in throw Boom() })

        let collected: Just<[Int]> = just.collect()
        let counted: Just<Int> = just.count()
        #expect(collected.output == [3])
        #expect(counted.output == 1)
        expectAgree(counted, general.count())

        let reduced: Result<Int, Never>.Publisher = just.reduce(10) { $0 + $1 }
        let scanned: Result<Int, Never>.Publisher = just.scan(10) { $0 + $1 }
        expectAgree(reduced, general.reduce(10) { $0 + $1 })
        expectAgree(scanned, general.scan(10) { $0 + $1 })
        let tryReduced: Result<Int, any Error>.Publisher = just.tryReduce(10) { _, _ in throw Boom() }
        let tryScanned: Result<Int, any Error>.Publisher = just.tryScan(10) { $0 * $1 }
        #expect(events(tryReduced) == ["failure(Boom())"])
        expectAgree(tryScanned, general.tryScan(10) { $0 * $1 })

        let smallest: Just<Int> = just.min()
        let largest: Just<Int> = just.max()
        let smallestBy: Just<Int> = just.min { $0 > $1 }
        let largestBy: Just<Int> = just.max { $0 > $1 }
        let selected: [Just<Int>] = [smallest, largest, smallestBy, largestBy]
        #expect(selected.allSatisfy { $0.output == 3 })
    }

    @Test func justSelectionsReturnJustOrOptionalPublishers() {
        let just = Just("a")
        let general = just.eraseToAnyPublisher()

        let first: Just<String> = just.first()
        let last: Just<String> = just.last()
        #expect(first.output == "a")
        #expect(last.output == "a")
        let firstWhere: Optional<String>.Publisher = just.first { $0 == "b" }
        let lastWhere: Optional<String>.Publisher = just.last { $0 == "a" }
        #expect(firstWhere.output == nil)
        #expect(lastWhere.output == "a")
        expectAgree(firstWhere, general.first { $0 == "b" })

        let dropOne: Optional<String>.Publisher = just.dropFirst()
        let dropNone: Optional<String>.Publisher = just.dropFirst(0)
        let dropWhile: Optional<String>.Publisher = just.drop { $0 == "a" }
        #expect(dropOne.output == nil)
        #expect(dropNone.output == "a")
        #expect(dropWhile.output == nil)
        expectAgree(dropOne, general.dropFirst())
        expectAgree(dropNone, general.dropFirst(0))

        let prefixNone: Optional<String>.Publisher = just.prefix(0)
        let prefixOne: Optional<String>.Publisher = just.prefix(2)
        let prefixWhile: Optional<String>.Publisher = just.prefix { $0 == "a" }
        #expect(prefixNone.output == nil)
        #expect(prefixOne.output == "a")
        #expect(prefixWhile.output == "a")
        expectAgree(prefixNone, general.prefix(0))

        let at0: Optional<String>.Publisher = just.output(at: 0)
        let at1: Optional<String>.Publisher = just.output(at: 1)
        let in0: Optional<String>.Publisher = just.output(in: 0...2)
        let in1: Optional<String>.Publisher = just.output(in: 1..<3)
        #expect(at0.output == "a")
        #expect(at1.output == nil)
        #expect(in0.output == "a")
        #expect(in1.output == nil)
        expectAgree(in1, general.output(in: 1..<3))

        let ignored: Empty<String, Never> = just.ignoreOutput()
        #expect(events(ignored) == ["finished"])
    }

    @Test func justIdentitiesAndConcatenations() {
        let just = Just(2)
        let unique: Just<Int> = just.removeDuplicates()
        let uniqueBy: Just<Int> = just.removeDuplicates { _, _ in true }
        let tryUnique: Result<Int, any Error>.Publisher = just.tryRemoveDuplicates { _, _ in throw Boom() }
        let replacedError: Just<Int> = just.replaceError(with: 0)
        let replacedEmpty: Just<Int> = just.replaceEmpty(with: 0)
        let retried: Just<Int> = just.retry(3)
        let identities: [Just<Int>] = [unique, uniqueBy, replacedError, replacedEmpty, retried]
        #expect(identities.allSatisfy { $0.output == 2 })
        #expect(events(tryUnique) == ["2", "finished"])

        let prepended: Publishers.Sequence<[Int], Never> = just.prepend(0, 1)
        let prependedSequence: Publishers.Sequence<[Int], Never> = just.prepend(stride(from: 0, to: 2, by: 1))
        let appended: Publishers.Sequence<[Int], Never> = just.append(3, 4)
        let appendedSequence: Publishers.Sequence<[Int], Never> = just.append(3..<5)
        #expect(prepended.sequence == [0, 1, 2] && prependedSequence.sequence == [0, 1, 2])
        #expect(appended.sequence == [2, 3, 4] && appendedSequence.sequence == [2, 3, 4])
        expectAgree(appended, just.eraseToAnyPublisher().append(3, 4))
    }

    /// The general `prefix(0)` and an empty `output(in:)` send nothing even when upstream sends during
    /// the subscription (as `Just` and a sequence do): they sent the first element before.
    @Test func emptyPrefixOfASynchronousPublisherSendsNothing() {
        #expect(events(Just(1).eraseToAnyPublisher().prefix(0)) == ["finished"])
        #expect(events([1, 2].publisher.eraseToAnyPublisher().output(in: 1..<1)) == ["finished"])
    }

    // MARK: Optional.Publisher

    @Test func optionalPublisherOperatorsReturnOptionalPublishers() {
        for value in [Optional(4), nil] {
            let publisher = value.publisher
            let general = publisher.eraseToAnyPublisher()

            let mapped: Optional<String>.Publisher = publisher.map { "\($0)" }
            expectAgree(mapped, general.map { "\($0)" })
            let compact: Optional<Int>.Publisher = publisher.compactMap { $0 > 3 ? $0 * 2 : nil }
            expectAgree(compact, general.compactMap { $0 > 3 ? $0 * 2 : nil })
            let filtered: Optional<Int>.Publisher = publisher.filter { $0 > 5 }
            expectAgree(filtered, general.filter { $0 > 5 })

            let all: Optional<Bool>.Publisher = publisher.allSatisfy { $0 > 5 }
            expectAgree(all, general.allSatisfy { $0 > 5 })
            let any: Optional<Bool>.Publisher = publisher.contains { $0 > 3 }
            expectAgree(any, general.contains { $0 > 3 })
            let equal: Optional<Bool>.Publisher = publisher.contains(4)
            expectAgree(equal, general.contains(4))
            let collected: Optional<[Int]>.Publisher = publisher.collect()
            expectAgree(collected, general.collect())
            let counted: Optional<Int>.Publisher = publisher.count()
            expectAgree(counted, general.count())
            let reduced: Optional<Int>.Publisher = publisher.reduce(10, +)
            expectAgree(reduced, general.reduce(10, +))
            let scanned: Optional<Int>.Publisher = publisher.scan(10, +)
            expectAgree(scanned, general.scan(10, +))

            let selections: [(Optional<Int>.Publisher, AnyPublisher<Int, Never>)] = [
                (publisher.min(), general.min().eraseToAnyPublisher()),
                (publisher.max(), general.max().eraseToAnyPublisher()),
                (publisher.min(by: >), general.min(by: >).eraseToAnyPublisher()),
                (publisher.max(by: >), general.max(by: >).eraseToAnyPublisher()),
                (publisher.first(), general.first().eraseToAnyPublisher()),
                (publisher.last(), general.last().eraseToAnyPublisher()),
                (publisher.first { $0 > 5 }, general.first { $0 > 5 }.eraseToAnyPublisher()),
                (publisher.last { $0 > 3 }, general.last { $0 > 3 }.eraseToAnyPublisher()),
                (publisher.dropFirst(), general.dropFirst().eraseToAnyPublisher()),
                (publisher.dropFirst(0), general.dropFirst(0).eraseToAnyPublisher()),
                (publisher.drop { $0 > 3 }, general.drop { $0 > 3 }.eraseToAnyPublisher()),
                (publisher.prefix(0), general.prefix(0).eraseToAnyPublisher()),
                (publisher.prefix(1), general.prefix(1).eraseToAnyPublisher()),
                (publisher.prefix { $0 > 5 }, general.prefix { $0 > 5 }.eraseToAnyPublisher()),
                (publisher.output(at: 0), general.output(at: 0).eraseToAnyPublisher()),
                (publisher.output(at: 1), general.output(at: 1).eraseToAnyPublisher()),
                (publisher.output(in: 0..<1), general.output(in: 0..<1).eraseToAnyPublisher()),
                (publisher.output(in: 1...), general.output(in: 1...).eraseToAnyPublisher()),
                (publisher.removeDuplicates(), general.removeDuplicates().eraseToAnyPublisher()),
                (
                    publisher.removeDuplicates { _, _ in true },
                    general.removeDuplicates { _, _ in true }.eraseToAnyPublisher()
                ),
                (publisher.replaceError(with: 0), general.replaceError(with: 0).eraseToAnyPublisher()),
                (publisher.retry(1), general.retry(1).eraseToAnyPublisher()),
            ]
            for (index, (specialized, generalized)) in selections.enumerated() {
                expectAgree(specialized, generalized, "selection \(index) of \(String(describing: value))")
            }

            let replaced: Just<Int> = publisher.replaceEmpty(with: 7)
            expectAgree(replaced, general.replaceEmpty(with: 7))
            let ignored: Empty<Int, Never> = publisher.ignoreOutput()
            #expect(events(ignored) == ["finished"])
        }
    }

    // MARK: Result.Publisher

    @Test func resultPublisherOperatorsReturnResultPublishers() {
        for result in [Result<Int, Boom>.success(4), .failure(Boom())] {
            let publisher = result.publisher
            let general = publisher.eraseToAnyPublisher()

            let mapped: Result<String, Boom>.Publisher = publisher.map { "\($0)" }
            expectAgree(mapped, general.map { "\($0)" })
            let tried: Result<Int, any Error>.Publisher = publisher.tryMap { $0 * 2 }
            expectAgree(tried, general.tryMap { $0 * 2 })
            struct Other: Error {}
            let otherError: Result<Int, Other>.Publisher = publisher.mapError { _ in Other() }
            expectAgree(otherError, general.mapError { _ in Other() })

            let bools: [(Result<Bool, Boom>.Publisher, AnyPublisher<Bool, Boom>)] = [
                (publisher.allSatisfy { $0 > 5 }, general.allSatisfy { $0 > 5 }.eraseToAnyPublisher()),
                (publisher.contains { $0 > 3 }, general.contains { $0 > 3 }.eraseToAnyPublisher()),
                (publisher.contains(4), general.contains(4).eraseToAnyPublisher()),
            ]
            for (specialized, generalized) in bools {
                expectAgree(specialized, generalized)
            }
            let tryAll: Result<Bool, any Error>.Publisher = publisher.tryAllSatisfy { _ in throw Boom() }
            expectAgree(tryAll, general.tryAllSatisfy { _ in throw Boom() })
            let tryAny: Result<Bool, any Error>.Publisher = publisher.tryContains { $0 > 3 }
            expectAgree(tryAny, general.tryContains { $0 > 3 })

            let collected: Result<[Int], Boom>.Publisher = publisher.collect()
            expectAgree(collected, general.collect())
            let counted: Result<Int, Boom>.Publisher = publisher.count()
            expectAgree(counted, general.count())
            let reduced: Result<Int, Boom>.Publisher = publisher.reduce(10, +)
            expectAgree(reduced, general.reduce(10, +))
            let scanned: Result<Int, Boom>.Publisher = publisher.scan(10, +)
            expectAgree(scanned, general.scan(10, +))
            let tryReduced: Result<Int, any Error>.Publisher = publisher.tryReduce(10, +)
            expectAgree(tryReduced, general.tryReduce(10, +))
            let tryScanned: Result<Int, any Error>.Publisher = publisher.tryScan(10) { _, _ in throw Boom() }
            expectAgree(tryScanned, general.tryScan(10) { _, _ in throw Boom() })

            let same: [(Result<Int, Boom>.Publisher, AnyPublisher<Int, Boom>)] = [
                (publisher.min(), general.min().eraseToAnyPublisher()),
                (publisher.max(), general.max().eraseToAnyPublisher()),
                (publisher.min(by: >), general.min(by: >).eraseToAnyPublisher()),
                (publisher.max(by: >), general.max(by: >).eraseToAnyPublisher()),
                (publisher.first(), general.first().eraseToAnyPublisher()),
                (publisher.last(), general.last().eraseToAnyPublisher()),
                (publisher.removeDuplicates(), general.removeDuplicates().eraseToAnyPublisher()),
                (publisher.removeDuplicates(by: ==), general.removeDuplicates(by: ==).eraseToAnyPublisher()),
                (publisher.replaceEmpty(with: 7), general.replaceEmpty(with: 7).eraseToAnyPublisher()),
                (publisher.retry(2), general.retry(2).eraseToAnyPublisher()),
            ]
            for (index, (specialized, generalized)) in same.enumerated() {
                expectAgree(specialized, generalized, "operator \(index) of \(result)")
            }
            let widened: [(Result<Int, any Error>.Publisher, AnyPublisher<Int, any Error>)] = [
                (publisher.tryMin(by: >), general.tryMin(by: >).eraseToAnyPublisher()),
                (publisher.tryMax(by: >), general.tryMax(by: >).eraseToAnyPublisher()),
                (publisher.tryRemoveDuplicates(by: ==), general.tryRemoveDuplicates(by: ==).eraseToAnyPublisher()),
            ]
            for (specialized, generalized) in widened {
                expectAgree(specialized, generalized)
            }
            let replaced: Result<Int, Never>.Publisher = publisher.replaceError(with: 0)
            expectAgree(replaced, general.replaceError(with: 0))
        }

        let never = Result<Int, Never>.success(1).publisher
        let failing: Result<Int, Boom>.Publisher = never.setFailureType(to: Boom.self)
        #expect(failing.result == .success(1))
    }

    // MARK: Publishers.Sequence

    @Test func sequencePublisherTrySearchesReturnResultPublishers() {
        let numbers = [1, 2, 3].publisher
        let general = numbers.eraseToAnyPublisher()
        let all: Result<Bool, any Error>.Publisher = numbers.tryAllSatisfy { $0 > 0 }
        expectAgree(all, general.tryAllSatisfy { $0 > 0 })
        let allThrows: Result<Bool, any Error>.Publisher = numbers.tryAllSatisfy { _ in throw Boom() }
        expectAgree(allThrows, general.tryAllSatisfy { _ in throw Boom() })
        let any: Result<Bool, any Error>.Publisher = numbers.tryContains { $0 == 2 }
        expectAgree(any, general.tryContains { $0 == 2 })
        let anyThrows: Result<Bool, any Error>.Publisher = numbers.tryContains {
            if $0 == 2 { throw Boom() }
            return false
        }
        #expect(events(anyThrows) == ["failure(Boom())"])
    }

    @Test func randomAccessSequencePublisherCountIsAJust() {
        let counted: Just<Int> = (0..<5).publisher.count()
        #expect(counted.output == 5)
        let failing = Publishers.Sequence<[Int], Boom>(sequence: [1, 2])
        let countedFailing: Result<Int, Boom>.Publisher = failing.count()
        #expect(countedFailing.result == .success(2))
    }

    @Test func rangeReplaceableSequencePublisherAppendsAndPrepends() {
        let numbers = [2, 3].publisher
        let appended: Publishers.Sequence<[Int], Never> = numbers.append(4, 5)
        let appendedSequence: Publishers.Sequence<[Int], Never> = numbers.append(4..<6)
        let appendedPublisher: Publishers.Sequence<[Int], Never> = numbers.append([4, 5].publisher)
        let prepended: Publishers.Sequence<[Int], Never> = numbers.prepend(0, 1)
        let prependedSequence: Publishers.Sequence<[Int], Never> = numbers.prepend(0..<2)
        let prependedPublisher: Publishers.Sequence<[Int], Never> = numbers.prepend([0, 1].publisher)
        let appends: [Publishers.Sequence<[Int], Never>] = [appended, appendedSequence, appendedPublisher]
        let prepends: [Publishers.Sequence<[Int], Never>] = [prepended, prependedSequence, prependedPublisher]
        #expect(appends.allSatisfy { $0.sequence == [2, 3, 4, 5] })
        #expect(prepends.allSatisfy { $0.sequence == [0, 1, 2, 3] })
        expectAgree(prepended, numbers.eraseToAnyPublisher().prepend(0, 1))
        let text: Publishers.Sequence<String, Never> = "bc".publisher.prepend("a").append("d")
        #expect(text.sequence == "abcd")
    }
}
