import Dispatch
import Reactive
import TestSupport
import Testing

private typealias HandPublisher = CombiningTestKit.HandPublisher
private typealias RangePublisher = CombiningTestKit.RangePublisher
private typealias SerialSubscriber = CombiningTestKit.SerialSubscriber
private typealias TestError = CombiningTestKit.TestError

@Suite(.offPool) struct MergeTests {
    @Test func interleavesTwoSubjectsAndFinishesWhenBothFinished() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        a.merge(with: b).subscribe(subscriber)
        a.send(1)
        b.send(2)
        a.send(3)
        a.send(completion: .finished)
        b.send(4)
        #expect(subscriber.completion == nil)
        b.send(completion: .finished)
        #expect(
            subscriber.history == [
                .subscription, .value(1), .value(2), .value(3), .value(4), .completion(.finished),
            ]
        )
    }

    @Test func failsOnTheFirstFailureAndCancelsTheOthers() {
        let a = HandPublisher<Int, TestError>()
        let b = HandPublisher<Int, TestError>()
        let c = HandPublisher<Int, TestError>()
        let subscriber = TrackingSubscriber<Int, TestError>()
        a.merge(with: b, c).subscribe(subscriber)
        a.send(1)
        b.send(completion: .failure(TestError(code: 2)))
        c.send(3)
        #expect(subscriber.history == [.subscription, .value(1), .completion(.failure(TestError(code: 2)))])
        #expect(a.subscription?.history == [.requested(.unlimited), .cancelled])
        #expect(c.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func finiteDemandIsSharedOneAtATime() {
        let a = HandPublisher<Int, Never>()
        let b = HandPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        a.merge(with: b).subscribe(subscriber)
        #expect(a.subscription?.history == [.requested(.max(1))])
        #expect(b.subscription?.history == [.requested(.max(1))])
        #expect(a.send(1) == .max(1))  // delivered: asks a for one more
        #expect(b.send(2) == .none)  // waits for demand
        #expect(subscriber.values == [1])
        #expect(b.subscription?.history == [.requested(.max(1))])
        subscriber.request(.max(1))
        #expect(subscriber.values == [1, 2])
        #expect(b.subscription?.history == [.requested(.max(1)), .requested(.max(1))])
    }

    @Test func mergeOfSynchronousPublishersDeliversEverything() {
        let subscriber = TrackingSubscriber<Int, Never>()
        RangePublisher(0..<3).merge(with: RangePublisher(10..<12)).subscribe(subscriber)
        #expect(
            subscriber.history == [
                .subscription, .value(0), .value(1), .value(2), .value(10), .value(11), .completion(.finished),
            ]
        )
    }

    @Test func chainedMergesFlattenIntoWiderMerges() {
        let just = Just(1)
        let merge3: Publishers.Merge3<Just<Int>, Just<Int>, Just<Int>> = just.merge(with: just).merge(with: just)
        typealias J = Just<Int>
        let merge8: Publishers.Merge8<J, J, J, J, J, J, J, J> =
            merge3.merge(with: just, just).merge(with: just, just, just)
        let subscriber = TrackingSubscriber<Int, Never>()
        merge8.subscribe(subscriber)
        #expect(subscriber.values == Array(repeating: 1, count: 8))
        #expect(subscriber.completion == .finished)
        #expect(merge3 == Publishers.Merge3(just, just, just))
    }

    @Test func everyArityMergesAllItsUpstreams() {
        let p = [1, 2].publisher
        var counts: [Int] = []
        var cancellables: [AnyCancellable] = []
        func count<P: Publisher>(_ publisher: P) where P.Failure == Never {
            var n = 0
            publisher.sink { _ in n += 1 }.store(in: &cancellables)
            counts.append(n)
        }
        count(p.merge(with: p))
        count(p.merge(with: p, p))
        count(p.merge(with: p, p, p))
        count(p.merge(with: p, p, p, p))
        count(p.merge(with: p, p, p, p, p))
        count(p.merge(with: p, p, p, p, p, p))
        count(p.merge(with: p, p, p, p, p, p, p))
        count(Publishers.MergeMany(Array(repeating: p, count: 9)))
        #expect(counts == [4, 6, 8, 10, 12, 14, 16, 18])
    }

    /// Each of the 21 `merge(with:…)` methods that add publishers to a merge (generated, like the merges themselves)
    /// gives the flat merge of the sum of the arities, which subscribes to every upstream once.
    @Test func everyMergeAddsEachCountOfPublishersIntoOneFlatMerge() {
        let p = Just(1)
        var checked: [Int] = []
        func check<M: Publisher>(_ merged: M, _ arity: Int) where M.Output == Int, M.Failure == Never {
            let name = String(describing: M.self)
            #expect(name.hasPrefix(arity == 2 ? "Merge<" : "Merge\(arity)<"), "\(name) for \(arity)")
            let subscriber = TrackingSubscriber<Int, Never>()
            merged.subscribe(subscriber)
            #expect(subscriber.values == Array(repeating: 1, count: arity), "\(name)")
            #expect(subscriber.completion == .finished, "\(name)")
            checked.append(arity)
        }
        let m2 = p.merge(with: p)
        let m3 = p.merge(with: p, p)
        let m4 = p.merge(with: p, p, p)
        let m5 = p.merge(with: p, p, p, p)
        let m6 = p.merge(with: p, p, p, p, p)
        let m7 = p.merge(with: p, p, p, p, p, p)
        for (merged, arity) in [(m2, 2), (m3, 3), (m4, 4), (m5, 5), (m6, 6), (m7, 7)]
            as [(any Publisher<Int, Never>, Int)]
        {
            check(merged, arity)
        }
        check(p.merge(with: p, p, p, p, p, p, p), 8)
        check(m2.merge(with: p), 3)
        check(m2.merge(with: p, p), 4)
        check(m2.merge(with: p, p, p), 5)
        check(m2.merge(with: p, p, p, p), 6)
        check(m2.merge(with: p, p, p, p, p), 7)
        check(m2.merge(with: p, p, p, p, p, p), 8)
        check(m3.merge(with: p), 4)
        check(m3.merge(with: p, p), 5)
        check(m3.merge(with: p, p, p), 6)
        check(m3.merge(with: p, p, p, p), 7)
        check(m3.merge(with: p, p, p, p, p), 8)
        check(m4.merge(with: p), 5)
        check(m4.merge(with: p, p), 6)
        check(m4.merge(with: p, p, p), 7)
        check(m4.merge(with: p, p, p, p), 8)
        check(m5.merge(with: p), 6)
        check(m5.merge(with: p, p), 7)
        check(m5.merge(with: p, p, p), 8)
        check(m6.merge(with: p), 7)
        check(m6.merge(with: p, p), 8)
        check(m7.merge(with: p), 8)
        #expect(checked.count == 6 + 1 + 21)
        #expect(m7 == Publishers.Merge7(p, p, p, p, p, p, p))
    }

    @Test func mergeManyOfNothingFinishesAtOnce() {
        let subscriber = TrackingSubscriber<Int, Never>()
        Publishers.MergeMany<Just<Int>>([]).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
    }

    @Test func mergeManyAddsPublishersOfTheSameType() {
        let subscriber = TrackingSubscriber<Int, Never>()
        let merged = Publishers.MergeMany(Just(1), Just(2)).merge(with: Just(3))
        merged.subscribe(subscriber)
        #expect(merged.publishers.count == 3)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3), .completion(.finished)])
        #expect(merged == Publishers.MergeMany([Just(1), Just(2), Just(3)]))
    }

    @Test func describesItselfAsMerge() {
        let subscriber = TrackingSubscriber<Int, Never>()
        PassthroughSubject<Int, Never>().merge(with: PassthroughSubject<Int, Never>()).subscribe(subscriber)
        #expect((subscriber.subscription as? any CustomStringConvertible)?.description == "Merge")
    }

    @Test func concurrentSendsAreSerializedCountedExactlyAndCompleteOnce() {
        let subjects = (0..<4).map { _ in PassthroughSubject<Int, Never>() }
        let subscriber = SerialSubscriber<Int, Never>()
        subjects[0].merge(with: subjects[1], subjects[2], subjects[3]).subscribe(subscriber)
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            for value in 0..<2_500 { subjects[index].send(value) }
            subjects[index].send(completion: .finished)
        }
        #expect(subscriber.waitForCompletion())
        #expect(subscriber.values.count == 10_000)
        #expect(subscriber.completions.count == 1)
        #expect(subscriber.overlaps == 0)
    }

    @Test func concurrentRequestsNeverOverDeliver() {
        for _ in 0..<20 {
            let subjects = (0..<2).map { _ in PassthroughSubject<Int, Never>() }
            let subscriber = SerialSubscriber<Int, Never>(initialDemand: .max(1))
            Publishers.MergeMany(subjects).subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 5) { index in
                switch index {
                case 0, 1: for value in 0..<300 { subjects[index].send(value) }
                case 4: subscriber.cancel()
                default: for _ in 0..<40 { subscriber.request(.max(1)) }
                }
            }
            #expect(subscriber.values.count <= 81)
            #expect(subscriber.completions.isEmpty)
            #expect(subscriber.overlaps == 0)
        }
    }

    @Test func releasesEverythingAfterFinishingOrCancelling() {
        weak var finished: AnyObject?
        weak var cancelled: AnyObject?
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        do {
            let first = TrackingSubscriber<Int, Never>()
            let second = TrackingSubscriber<Int, Never>()
            a.merge(with: b).subscribe(first)
            Publishers.MergeMany(a, b).subscribe(second)
            finished = first.subscription as AnyObject?
            cancelled = second.subscription as AnyObject?
            a.send(1)
            second.cancel()
            a.send(completion: .finished)
            b.send(completion: .finished)
            #expect(first.completion == .finished)
        }
        #expect(finished == nil)
        #expect(cancelled == nil)
    }
}
