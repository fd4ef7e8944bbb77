import Foundation
import Reactive
import TestSupport
import Testing

/// The behaviours of issue 13 where Reactive used to differ from Combine, each written from Combine's
/// documented (or, where the documentation is silent, observed) behaviour.
@Suite struct CombineConformanceTests {
    // MARK: sink releases its closures

    final class Owner {
        var count = 0
        var cancellable: AnyCancellable?
    }

    @Test func sinkReleasesItsClosuresOnCompletion() {
        let subject = PassthroughSubject<Int, Never>()
        weak var weakOwner: Owner?
        do {
            let owner = Owner()
            weakOwner = owner
            owner.cancellable = subject.sink { owner.count += $0 }
            subject.send(2)
            #expect(owner.count == 2)
        }
        #expect(weakOwner != nil)  // the cycle owner → cancellable → sink → closure → owner
        subject.send(completion: .finished)
        #expect(weakOwner == nil)
    }

    @Test func sinkReleasesItsClosuresOnCancel() {
        let subject = PassthroughSubject<Int, Never>()
        weak var weakOwner: Owner?
        var cancellable: AnyCancellable?
        do {
            let owner = Owner()
            weakOwner = owner
            cancellable = subject.sink(
                receiveCompletion: { _ in owner.count = -1 },
                receiveValue: { owner.count += $0 }
            )
        }
        subject.send(1)
        #expect(weakOwner?.count == 1)
        cancellable?.cancel()
        #expect(weakOwner == nil)
        subject.send(5)
        _ = cancellable
    }

    @Test func sinkReleasesItsClosuresWhenCancelledFromInsideTheValueClosure() {
        let subject = PassthroughSubject<Int, Never>()
        weak var weakOwner: Owner?
        do {
            let owner = Owner()
            weakOwner = owner
            owner.cancellable = subject.sink { [unowned owner] value in
                owner.count += value
                owner.cancellable?.cancel()
            }
            _ = owner.cancellable
        }
        // The sink holds the closure; the closure only unowned-references the owner, which the
        // cancellable keeps... nothing holds the owner but its own cancellable's closure: freed already.
        #expect(weakOwner == nil)

        let box = TestBox(0)
        var cancellable: AnyCancellable?
        weak var weakCapture: Owner?
        do {
            let capture = Owner()
            weakCapture = capture
            cancellable = subject.sink { value in
                capture.count += value
                box.update { $0 += value }
                cancellable?.cancel()
            }
        }
        subject.send(3)
        subject.send(4)
        #expect(box.value == 3)
        #expect(weakCapture == nil)
    }

    @Test func sinkCancelledBeforeSubscriptionReleasesItsClosures() {
        weak var weakOwner: Owner?
        let sink: Subscribers.Sink<Int, Never>
        do {
            let owner = Owner()
            weakOwner = owner
            sink = Subscribers.Sink(receiveCompletion: { _ in owner.count = 0 }, receiveValue: { owner.count = $0 })
        }
        #expect(weakOwner != nil)
        sink.cancel()
        #expect(weakOwner == nil)
    }

    // MARK: CurrentValueSubject as a subscriber

    @Test func currentValueSubjectAsSubscriberRequestsUnlimitedAtOnce() {
        let subject = CurrentValueSubject<Int, Never>(0)
        let cancellable = [1, 2, 3].publisher.subscribe(subject)
        #expect(subject.value == 3)
        _ = cancellable

        let upstream = DrivenPublisher<Int, Never>()
        let other = CurrentValueSubject<Int, Never>(0)
        let link = upstream.subscribe(other)
        #expect(upstream.subscription.history == [.requested(.unlimited)])
        _ = link
    }

    @Test func settingValueAfterCompletionStoresItButSendsNothing() {
        let subject = CurrentValueSubject<Int, Never>(1)
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.subscribe(subscriber)
        subject.send(completion: .finished)
        subject.value = 5
        #expect(subject.value == 5)
        subject.send(6)
        #expect(subject.value == 5)
        #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
    }

    // MARK: no trap on a demand of zero

    /// Each operator Combine does not trap in, asked for `.none` first, then for one value. Most pass
    /// the zero upstream (CombineBehaviourTests), where the sequence subscription ignores it.
    @Test func aDemandOfZeroIsIgnored() {
        let scheduler = VirtualTimeScheduler()
        func check<P: Publisher>(_ name: String, _ publisher: P, expecting expected: [Int], run: Bool = true)
        where P.Output == Int {
            let subscriber = TrackingSubscriber<Int, P.Failure>(initialDemand: nil)
            publisher.subscribe(subscriber)
            subscriber.request(.none)
            if run { scheduler.run() }
            subscriber.request(.max(1))
            if run { scheduler.run() }
            #expect(subscriber.values == expected, "\(name)")
        }
        check("sequence", [1, 2].publisher, expecting: [1])
        check("receive(on:)", [1, 2].publisher.receive(on: scheduler), expecting: [1])
        check("subscribe(on:)", [1, 2].publisher.subscribe(on: scheduler), expecting: [1])
        check("delay", [1, 2].publisher.delay(for: .seconds(1), scheduler: scheduler), expecting: [1])
        check("handleEvents", [1, 2].publisher.handleEvents(), expecting: [1])
        // timeout: only advance less than its interval, which would otherwise end the stream first.
        let timedOut = TrackingSubscriber<Int, Never>(initialDemand: nil)
        [1, 2].publisher.timeout(.seconds(1), scheduler: scheduler).subscribe(timedOut)
        timedOut.request(.none)
        timedOut.request(.max(1))
        scheduler.advance(by: .milliseconds(500))
        #expect(timedOut.values == [1])
        timedOut.cancel()

        let subject = PassthroughSubject<Int, Never>()
        let throttled = TrackingSubscriber<Int, Never>(initialDemand: nil)
        subject.throttle(for: .seconds(1), scheduler: scheduler, latest: true).subscribe(throttled)
        throttled.request(.none)
        throttled.request(.max(1))
        subject.send(1)
        scheduler.run()
        #expect(throttled.values == [1])
    }

    @Test func handleEventsReportsAZeroDemandToReceiveRequest() {
        let requests = TestBox<[Subscribers.Demand]>([])
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        [1].publisher.handleEvents(receiveRequest: { demand in requests.update { $0.append(demand) } })
            .subscribe(subscriber)
        subscriber.request(.none)
        subscriber.request(.max(1))
        #expect(requests.value == [.none, .max(1)])
        #expect(subscriber.values == [1])
    }

    /// Combine counts retries down to zero, which a negative count never reaches: it retries forever.
    @Test func retryWithANegativeCountRetriesWithoutLimit() {
        let upstream = DrivenPublisher<Int, OperatorError>()
        let subscriber = TrackingSubscriber<Int, OperatorError>()
        upstream.retry(-1).subscribe(subscriber)
        for code in 1...5 {
            upstream.send(completion: .failure(OperatorError(code: code)))
        }
        #expect(upstream.subscribeCount == 6)
        #expect(subscriber.completion == nil)
        upstream.send(1)
        #expect(subscriber.history == [.subscription, .value(1)])
    }

    // MARK: removeDuplicates has a subscription of its own

    @Test func removeDuplicatesGivesDownstreamItsOwnSubscription() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.removeDuplicates().subscribe(subscriber)
        #expect(subscriber.subscription as AnyObject? !== upstream.subscription)
        upstream.send(1)
        upstream.send(1)
        upstream.send(2)
        subscriber.cancel()
        subscriber.subscription?.cancel()
        upstream.send(completion: .finished)
        #expect(subscriber.history == [.subscription, .value(1), .value(2)])
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    // MARK: prefix(untilOutputFrom:)

    @Test func prefixUntilOutputFinishesAtTheOthersFirstValue() {
        let numbers = DrivenPublisher<Int, Never>()
        let stop = PassthroughSubject<Void, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        numbers.prefix(untilOutputFrom: stop).subscribe(subscriber)
        numbers.send(1)
        numbers.send(2)
        stop.send(())
        numbers.send(3)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
        #expect(numbers.subscription.isCancelled)
    }

    @Test func prefixUntilOutputIgnoresAnOtherThatFinishesWithoutValue() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2].publisher.prefix(untilOutputFrom: Empty<String, Never>()).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])

        let immediate = TrackingSubscriber<Int, Never>()
        [1, 2].publisher.prefix(untilOutputFrom: Just("now")).subscribe(immediate)
        #expect(immediate.history == [.subscription, .completion(.finished)])
    }

    @Test func prefixUntilOutputCancelsTheOtherOnCancel() {
        let numbers = DrivenPublisher<Int, Never>()
        let stop = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        numbers.prefix(untilOutputFrom: stop).subscribe(subscriber)
        #expect(stop.subscription.history == [.requested(.max(1))])
        subscriber.cancel()
        #expect(numbers.subscription.isCancelled)
        #expect(stop.subscription.isCancelled)
    }

    // MARK: Subscribers.Completion is Codable

    @Test func completionCodesAsCombineDoes() throws {
        struct Problem: Error, Codable, Equatable { var code: Int }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let finished = Subscribers.Completion<Problem>.finished
        let failure = Subscribers.Completion<Problem>.failure(Problem(code: 7))
        #expect(String(decoding: try encoder.encode(finished), as: UTF8.self) == #"{"success":true}"#)
        #expect(
            String(decoding: try encoder.encode(failure), as: UTF8.self) == #"{"error":{"code":7},"success":false}"#
        )
        let decoder = JSONDecoder()
        #expect(try decoder.decode(Subscribers.Completion<Problem>.self, from: encoder.encode(finished)) == finished)
        #expect(try decoder.decode(Subscribers.Completion<Problem>.self, from: encoder.encode(failure)) == failure)
        #expect(throws: DecodingError.self) {
            try decoder.decode(Subscribers.Completion<Problem>.self, from: Data(#"{"success":false}"#.utf8))
        }
    }

    // MARK: Combine's operator specializations and their return types

    @Test func specializationsReturnCombinesTypes() {
        let just: Just<String> = Just(2).map { "\($0)" }
        #expect(just.output == "2")

        let numbers = [3, 1, 2, 2].publisher
        let mapped: Publishers.Sequence<[Int], Never> = numbers.map { $0 * 10 }
        #expect(mapped.sequence == [30, 10, 20, 20])
        let filtered: Publishers.Sequence<[Int], Never> = numbers.filter { $0 > 1 }
        #expect(filtered.sequence == [3, 2, 2])
        let compact: Publishers.Sequence<[Int], Never> = ["1", "x"].publisher.compactMap { Int($0) }
        #expect(compact.sequence == [1])
        let scanned: Publishers.Sequence<[Int], Never> = numbers.scan(0, +)
        #expect(scanned.sequence == [3, 4, 6, 8])
        let unique: Publishers.Sequence<[Int], Never> = numbers.removeDuplicates()
        #expect(unique.sequence == [3, 1, 2])
        let dropped: Publishers.Sequence<DropFirstSequence<[Int]>, Never> = numbers.dropFirst(2)
        #expect(Array(dropped.sequence) == [2, 2])
        let prefix: Publishers.Sequence<PrefixSequence<[Int]>, Never> = numbers.prefix(1)
        #expect(Array(prefix.sequence) == [3])

        let first: Optional<Int>.Publisher = numbers.first()
        let firstMatch: Optional<Int>.Publisher = numbers.first { $0 < 3 }
        let last: Optional<Int>.Publisher = numbers.last()
        let minimum: Optional<Int>.Publisher = numbers.min()
        let maximum: Optional<Int>.Publisher = numbers.max()
        let at: Optional<Int>.Publisher = numbers.output(at: 1)
        let outputs: [Int?] = [first.output, firstMatch.output, last.output, minimum.output, maximum.output, at.output]
        #expect(outputs == [3, 1, 2, 1, 3, 1])
        #expect(numbers.output(at: 9).output == nil)

        let count: Result<Int, Never>.Publisher = numbers.count()
        let sum: Result<Int, Never>.Publisher = numbers.reduce(0, +)
        let all: Result<[Int], Never>.Publisher = numbers.collect()
        let contains: Result<Bool, Never>.Publisher = numbers.contains(2)
        let satisfied: Result<Bool, Never>.Publisher = numbers.allSatisfy { $0 > 0 }
        #expect(count.result.get() == 4)
        #expect(sum.result.get() == 8)
        #expect(all.result.get() == [3, 1, 2, 2])
        #expect(contains.result.get() && satisfied.result.get())

        let subscriber = TrackingSubscriber<Int, Never>()
        numbers.map { $0 + 1 }.subscribe(subscriber)
        #expect(subscriber.values == [4, 2, 3, 3])
    }

    @Test func chainedOperatorsFuseIntoOneOfTheSameType() {
        let subject = PassthroughSubject<Int, Never>()
        let mapped: Publishers.Map<PassthroughSubject<Int, Never>, String> = subject.map { $0 + 1 }.map { "\($0)" }
        let filtered: Publishers.Filter<PassthroughSubject<Int, Never>> = subject.filter { $0 > 1 }.filter { $0 < 4 }
        let tryFiltered: Publishers.TryFilter<PassthroughSubject<Int, Never>> = subject.filter { $0 > 1 }.tryFilter {
            $0 < 4
        }
        let compact: Publishers.CompactMap<PassthroughSubject<Int, Never>, Int> =
            subject.compactMap { $0 > 1 ? $0 : nil }.compactMap { $0 < 4 ? $0 * 10 : nil }
        let tryMapped: Publishers.TryMap<PassthroughSubject<Int, Never>, Int> = subject.map { $0 }.tryMap { $0 * 2 }

        let strings = TrackingSubscriber<String, Never>()
        let ints = TrackingSubscriber<Int, Never>()
        let tried = TrackingSubscriber<Int, any Error>()
        let compacted = TrackingSubscriber<Int, Never>()
        let doubled = TrackingSubscriber<Int, any Error>()
        mapped.subscribe(strings)
        filtered.subscribe(ints)
        tryFiltered.subscribe(tried)
        compact.subscribe(compacted)
        tryMapped.subscribe(doubled)
        for value in 1...5 { subject.send(value) }
        #expect(strings.values == ["2", "3", "4", "5", "6"])
        #expect(ints.values == [2, 3])
        #expect(tried.values == [2, 3])
        #expect(compacted.values == [20, 30])
        #expect(doubled.values == [2, 4, 6, 8, 10])
    }

    /// Every fusion Combine specializes, each named by its return type (issue 13): `map`/`tryMap`
    /// after `map` or `tryMap`, `filter`/`tryFilter` after `filter` or `tryFilter`, `compactMap`
    /// and `map` after `compactMap`, `compactMap` after `tryCompactMap`, and `removeDuplicates(by:)`
    /// after `removeDuplicates`.
    @Test func everyFusionReturnsOneOperatorOfTheSameType() throws {
        struct Odd: Error {}
        let subject = PassthroughSubject<Int, Never>()
        typealias Source = PassthroughSubject<Int, Never>
        let mapMap: Publishers.Map<Source, String> = subject.map { $0 * 2 }.map { "\($0)" }
        let mapTryMap: Publishers.TryMap<Source, Int> = subject.map { $0 * 2 }.tryMap { $0 + 1 }
        let tryMapMap: Publishers.TryMap<Source, Int> = subject.tryMap { $0 * 2 }.map { $0 + 1 }
        let tryMapTryMap: Publishers.TryMap<Source, Int> = subject.tryMap { $0 * 2 }.tryMap {
            if $0 == 6 { throw Odd() }
            return $0 + 1
        }
        let filterFilter: Publishers.Filter<Source> = subject.filter { $0 > 1 }.filter { $0 < 5 }
        let filterTryFilter: Publishers.TryFilter<Source> = subject.filter { $0 > 1 }.tryFilter { $0 < 5 }
        let tryFilterFilter: Publishers.TryFilter<Source> = subject.tryFilter { $0 > 1 }.filter { $0 < 5 }
        let tryFilterTryFilter: Publishers.TryFilter<Source> = subject.tryFilter { $0 > 1 }.tryFilter {
            if $0 == 4 { throw Odd() }
            return $0 < 5
        }
        let compactCompact: Publishers.CompactMap<Source, Int> =
            subject.compactMap { $0 > 1 ? $0 : nil }.compactMap { $0 < 5 ? $0 * 10 : nil }
        let compactMap: Publishers.CompactMap<Source, Int> = subject.compactMap { $0 > 1 ? $0 : nil }.map { $0 + 1 }
        let tryCompactCompact: Publishers.TryCompactMap<Source, Int> =
            subject.tryCompactMap { $0 > 1 ? $0 : nil }.compactMap { $0 < 5 ? $0 : nil }
        let unique: Publishers.RemoveDuplicates<Source> =
            subject.removeDuplicates().removeDuplicates { $0 % 10 == $1 % 10 }
        let uniqueBy: Publishers.RemoveDuplicates<Source> =
            subject.removeDuplicates(by: { $0 == $1 }).removeDuplicates(by: { $0 + 1 == $1 })

        let strings = TrackingSubscriber<String, Never>()
        let ints = (0..<4).map { _ in TrackingSubscriber<Int, Never>() }
        let tried = (0..<7).map { _ in TrackingSubscriber<Int, any Error>() }
        mapMap.subscribe(strings)
        mapTryMap.subscribe(tried[0])
        tryMapMap.subscribe(tried[1])
        tryMapTryMap.subscribe(tried[2])
        filterFilter.subscribe(ints[0])
        filterTryFilter.subscribe(tried[3])
        tryFilterFilter.subscribe(tried[4])
        tryFilterTryFilter.subscribe(tried[5])
        compactCompact.subscribe(ints[1])
        compactMap.subscribe(ints[2])
        tryCompactCompact.subscribe(tried[6])
        unique.subscribe(ints[3])
        let uniqueBySubscriber = TrackingSubscriber<Int, Never>()
        uniqueBy.subscribe(uniqueBySubscriber)
        for value in [1, 2, 2, 12, 3, 4, 5, 7] { subject.send(value) }

        #expect(strings.values == ["2", "4", "4", "24", "6", "8", "10", "14"])
        #expect(tried[0].values == [3, 5, 5, 25, 7, 9, 11, 15])
        #expect(tried[1].values == [3, 5, 5, 25, 7, 9, 11, 15])
        #expect(tried[2].values == [3, 5, 5, 25])  // 3 * 2 == 6 throws
        #expect(tried[2].completion.map { if case .failure(let error) = $0 { error is Odd } else { false } } == true)
        #expect(ints[0].values == [2, 2, 3, 4])
        #expect(tried[3].values == [2, 2, 3, 4])
        #expect(tried[4].values == [2, 2, 3, 4])
        #expect(tried[5].values == [2, 2, 3])  // 4 throws
        #expect(ints[1].values == [20, 20, 30, 40])
        #expect(ints[2].values == [3, 3, 13, 4, 5, 6, 8])
        #expect(tried[6].values == [2, 2, 3, 4])
        // One stage: a duplicate by either predicate of the last element passed on is dropped.
        #expect(ints[3].values == [1, 2, 3, 4, 5, 7])
        #expect(uniqueBySubscriber.values == [1, 12, 3, 5, 7])
    }

    // MARK: NotificationCenter

    @Test func notificationCenterPublisherDeliversWhatWasAskedFor() {
        let center = NotificationCenter()
        let name = Notification.Name("spout.test")
        let sender = NSObject()
        let subscriber = TrackingSubscriber<Notification, Never>(initialDemand: .max(2))
        center.publisher(for: name, object: sender).subscribe(subscriber)
        center.post(name: name, object: nil)  // another sender: not observed
        center.post(name: name, object: sender)
        center.post(name: Notification.Name("other"), object: sender)
        center.post(name: name, object: sender)
        center.post(name: name, object: sender)  // no demand left: dropped
        #expect(subscriber.values.count == 2)
        #expect(subscriber.values.allSatisfy { $0.name == name && $0.object as AnyObject? === sender })
        subscriber.cancel()
        subscriber.request(.max(5))
        center.post(name: name, object: sender)
        #expect(subscriber.values.count == 2)
        #expect(subscriber.completion == nil)
    }
}

/// `sink` under a cancel from another thread while values are being delivered: no crash, no value after
/// the cancel returned on the delivering thread's next send, and the closures are released.
@Suite(.offPool) struct SinkCancelRaceTests {
    final class Counter: @unchecked Sendable {
        // @unchecked Sendable: `count` is only touched by the (serialized) value closure.
        var count = 0
    }

    @Test func cancelRacingValuesReleasesTheClosuresOnce() {
        for _ in 0..<200 {
            let subject = PassthroughSubject<Int, Never>()
            weak var weakCounter: Counter?
            let cancellable: AnyCancellable
            do {
                let counter = Counter()
                weakCounter = counter
                cancellable = subject.sink { counter.count += $0 }
            }
            let box = TestBox(cancellable)
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                if index == 0 {
                    for _ in 0..<100 { subject.send(1) }
                } else {
                    box.value.cancel()
                }
            }
            // Whichever thread finished last released the closure; the counter is gone.
            #expect(weakCounter == nil)
            subject.send(1)
        }
    }
}
