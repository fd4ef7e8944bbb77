import Dispatch
import Reactive
import TestSupport
import Testing

@testable import Sequences

@Suite(.offPool) struct SequenceSubscriptionDemandTests {
    @Test(arguments: SequenceKind.allCases)
    func deliversExactlyTheInitialDemandAndDoesNotComplete(kind: SequenceKind) {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(3))
        SequencePublisher(kind: kind).subscribe(subscriber)
        #expect(subscriber.history.count == 4)
        #expect(subscriber.values.map(\.index) == [0, 1, 2])
        #expect(subscriber.completion == nil)
    }

    @Test func deliversNothingWithoutDemand() {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: nil)
        Naturals(count: 10).subscribe(subscriber)
        #expect(subscriber.history == [.subscription])
    }

    @Test func demandAccumulates() {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(2))
        Naturals().subscribe(subscriber)
        subscriber.request(.max(2))
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription] + (0..<5).map { .value(term($0, UInt64($0))) })
    }

    @Test func unlimitedDeliversEverythingAndFinishes() {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .unlimited)
        Naturals(start: 3, count: 4).subscribe(subscriber)
        #expect(
            subscriber.history == [.subscription] + (3..<7).map { .value(term($0, UInt64($0))) } + [
                .completion(.finished)
            ]
        )
    }

    @Test func finishesRightAfterTheLastElementWithoutFurtherDemand() {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(3))
        Naturals(count: 3).subscribe(subscriber)
        #expect(subscriber.history.last == .completion(.finished))
        #expect(subscriber.values.count == 3)
    }

    @Test func demandReturnedFromReceiveIsAdded() {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(1)) { _, term in
            term.index < 3 ? .max(2) : .none
        }
        Naturals().subscribe(subscriber)
        // 1 + 2 (after 0) + 2 (after 1) + 2 (after 2) = 7.
        #expect(subscriber.values.map(\.index) == Array(0..<7))
        #expect(subscriber.completion == nil)
    }

    @Test func unlimitedAbsorbsFurtherDemand() {
        let probe = SequenceProbe()
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(1)) { subscriber, term in
            if term.index == 0 { subscriber.request(.unlimited) }
            return .max(5)
        }
        Naturals(count: 50, probe: probe).subscribe(subscriber)
        #expect(subscriber.values.count == 50)
        #expect(probe.requested == .unlimited)
    }

    @Test func countZeroFinishesImmediatelyWithoutDemand() {
        let probe = SequenceProbe()
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: nil)
        Fibonacci(start: 5, count: 0, probe: probe).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
        #expect(probe.isFinished)
        #expect(probe.produced == 0)
    }

    @Test func requestsAfterFinishingDeliverNothing() {
        var subscription: (any Subscription)?
        var values = 0
        var completions = 0
        Naturals(count: 2).receive(
            subscriber: AnySubscriber<Term, Never>(
                receiveSubscription: {
                    subscription = $0
                    $0.request(.unlimited)
                },
                receiveValue: { _ in
                    values += 1
                    return .none
                },
                receiveCompletion: { _ in completions += 1 }
            )
        )
        subscription?.request(.max(5))
        subscription?.cancel()
        subscription?.request(.max(5))
        #expect(values == 2)
        #expect(completions == 1)
    }
}

@Suite(.offPool) struct SequenceSubscriptionReentrancyTests {
    @Test func requestingOneAtATimeFromInsideReceiveLoopsInsteadOfRecursing() {
        // 100,000 nested calls would overflow the stack; a loop does not.
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(1)) { subscriber, _ in
            subscriber.request(.max(1))
            return .none
        }
        Naturals(count: 100_000).subscribe(subscriber)
        let values = subscriber.values
        #expect(values.count == 100_000)
        #expect(values.map(\.index) == Array(0..<100_000))
        #expect(subscriber.completion == .finished)
    }

    @Test func fibonacciRequestingOneAtATimeStaysExact() {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(1)) { subscriber, _ in
            subscriber.request(.max(1))
            return .none
        }
        Fibonacci(count: 1_001).subscribe(subscriber)
        #expect(subscriber.values.last?.value.description == DecimalString.fibonacci(1_000))
        #expect(subscriber.history.filter { if case .completion = $0 { true } else { false } }.count == 1)
    }

    @Test func cancelInsideReceiveStopsDelivery() {
        let probe = SequenceProbe()
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .unlimited) { subscriber, term in
            if term.index == 5 { subscriber.cancel() }
            return .none
        }
        Naturals(probe: probe).subscribe(subscriber)
        #expect(subscriber.values.map(\.index) == Array(0...5))
        #expect(subscriber.completion == nil)
        #expect(probe.isCancelled)
        #expect(probe.produced == 6)
    }

    @Test func cancelInsideReceiveOfTheLastElementSuppressesCompletion() {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .unlimited) { subscriber, term in
            if term.index == 2 { subscriber.cancel() }
            return .none
        }
        Naturals(count: 3).subscribe(subscriber)
        #expect(subscriber.values.count == 3)
        #expect(subscriber.completion == nil)
    }

    @Test func cancelThenRequestInsideReceiveDeliversNothingMore() {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(1)) { subscriber, _ in
            let subscription = subscriber.subscription
            subscription?.cancel()
            subscription?.request(.max(10))
            return .max(10)
        }
        Primes().subscribe(subscriber)
        #expect(subscriber.values == [term(0, 2)])
    }

    @Test func requestInsideReceiveSubscriptionDeliversSynchronously() {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(2))
        Factorial().subscribe(subscriber)
        #expect(subscriber.values == [term(0, 1), term(1, 1)])
    }

    @Test func cancelBeforeAnyDemandMeansNothingIsProduced() {
        let probe = SequenceProbe()
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: nil)
        Fibonacci(start: 100_000, probe: probe).subscribe(subscriber)
        let subscription = subscriber.subscription
        subscriber.cancel()
        subscription?.request(.max(1))
        #expect(subscriber.history == [.subscription])
        #expect(probe.isCancelled)
        #expect(probe.produced == 0)
    }
}

@Suite(.offPool) struct SequenceSubscriptionRaceTests {
    @Test func concurrentRequestsDeliverExactlyTheDemandInOrderOneCallAtATime() {
        let subscriber = CheckingSubscriber()
        Naturals().subscribe(subscriber)
        DispatchQueue.concurrentPerform(iterations: 2_000) { _ in
            subscriber.request(.max(3))
        }
        #expect(subscriber.receivedIndices == Array(0..<6_000))
        #expect(subscriber.overlapCount == 0)
        #expect(subscriber.completionCount == 0)
    }

    @Test func concurrentRequestsPastTheCountFinishOnce() {
        let subscriber = CheckingSubscriber()
        Primes(count: 500).subscribe(subscriber)
        DispatchQueue.concurrentPerform(iterations: 1_000) { _ in
            subscriber.request(.max(1))
        }
        #expect(subscriber.receivedIndices == Array(0..<500))
        #expect(subscriber.completionCount == 1)
        #expect(subscriber.overlapCount == 0)
    }

    @Test(arguments: 0..<20)
    func concurrentRequestsAndCancelsNeverOverDeliver(round: Int) {
        let probe = SequenceProbe()
        let subscriber = CheckingSubscriber()
        Naturals(count: 1_500, probe: probe).subscribe(subscriber)
        DispatchQueue.concurrentPerform(iterations: 1_000) { iteration in
            if iteration % 250 == round % 250 + 100 {
                subscriber.cancel()
            } else {
                subscriber.request(.max(1))
            }
        }
        let received = subscriber.receivedIndices
        #expect(received.count <= 1_000 - 4)
        #expect(received == Array(0..<received.count))
        #expect(subscriber.completionCount == 0)
        #expect(subscriber.overlapCount == 0)
        #expect(probe.isCancelled)
        #expect(probe.produced == received.count)
        // Whatever was in flight has landed; nothing more arrives.
        subscriber.request(.unlimited)
        #expect(subscriber.receivedIndices.count == received.count)
    }

    @Test(arguments: 0..<20)
    func concurrentCancelsRacingTheLastElementCompleteAtMostOnce(round: Int) {
        let subscriber = CheckingSubscriber()
        Fibonacci(count: 200).subscribe(subscriber)
        DispatchQueue.concurrentPerform(iterations: 400) { iteration in
            if iteration == 190 + round { subscriber.cancel() } else { subscriber.request(.max(1)) }
        }
        #expect(subscriber.completionCount <= 1)
        #expect(subscriber.receivedIndices.count <= 200)
        #expect(subscriber.overlapCount == 0)
    }
}

@Suite(.offPool) struct SequenceSubscriptionBoundsTests {
    @Test func startNearIntMaxStopsAtIntMax() {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .unlimited)
        Naturals(start: .max - 1, count: 5).subscribe(subscriber)
        #expect(subscriber.values.map(\.index) == [.max - 1, .max])
        #expect(subscriber.values.map(\.value.description) == [String(Int.max - 1), String(Int.max)])
        #expect(subscriber.completion == .finished)
    }

    @Test func unboundedStreamFromIntMaxEndsThere() {
        #expect(terms(of: Naturals(start: .max)).map(\.index) == [.max])
        #expect(terms(of: SequencePublisher(kind: .naturals, start: .max, count: .max)).map(\.index) == [.max])
    }

    @Test(arguments: SequenceKind.allCases)
    func hugeCountsAreJustUnbounded(kind: SequenceKind) {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(4))
        SequencePublisher(kind: kind, start: 3, count: .max).subscribe(subscriber)
        #expect(subscriber.values.map(\.index) == [3, 4, 5, 6])
        #expect(subscriber.completion == nil)
    }

    @Test func hugeDemandSaturates() {
        let probe = SequenceProbe()
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(.max)) { subscriber, term in
            if term.index == 0 { subscriber.request(.max(.max)) }
            if term.index == 2 { subscriber.cancel() }
            return .none
        }
        Naturals(probe: probe).subscribe(subscriber)
        #expect(subscriber.values.count == 3)
        #expect(probe.requested == .unlimited)
    }

    @Test func negativeStartIsAnAPIViolation() async {
        await #expect(processExitsWith: .failure) {
            _ = Naturals(start: -1)
        }
    }

    @Test func zeroDemandIsAnAPIViolation() async {
        await #expect(processExitsWith: .failure) {
            let subscriber = TrackingSubscriber<Term, Never>(initialDemand: nil)
            Naturals().subscribe(subscriber)
            subscriber.request(.none)
        }
    }
}

@Suite(.offPool) struct SequenceSubscriptionLifecycleTests {
    @Test func cancelReleasesTheSubscriberAndTheSubscription() {
        weak var weakSubscriber: TrackingSubscriber<Term, Never>?
        weak var weakSubscription: AnyObject?
        do {
            let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(2))
            weakSubscriber = subscriber
            Fibonacci().subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subscriber.cancel()
        }
        #expect(weakSubscriber == nil)
        #expect(weakSubscription == nil)
    }

    @Test func finishReleasesTheSubscriberAndTheSubscription() {
        weak var weakSubscriber: TrackingSubscriber<Term, Never>?
        weak var weakSubscription: AnyObject?
        do {
            let subscriber = TrackingSubscriber<Term, Never>(initialDemand: nil)
            weakSubscriber = subscriber
            Primes(count: 3).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subscriber.request(.unlimited)
            #expect(subscriber.completion == .finished)
        }
        #expect(weakSubscriber == nil)
        #expect(weakSubscription == nil)
    }

    @Test func cancelReleasesTheSubscriberWhileTheSubscriptionLivesOn() {
        weak var weakSubscriber: ForgetfulSubscriber?
        var subscription: (any Subscription)?
        do {
            let subscriber = ForgetfulSubscriber(initialDemand: nil)
            weakSubscriber = subscriber
            Naturals().receive(
                subscriber: AnySubscriber<Term, Never>(
                    receiveSubscription: { subscription = $0 },
                    receiveValue: subscriber.receive(_:),
                    receiveCompletion: subscriber.receive(completion:)
                )
            )
            subscription?.request(.max(3))
            #expect(subscriber.received == 3)
        }
        #expect(weakSubscriber != nil)
        subscription?.cancel()
        #expect(weakSubscriber == nil)
        #expect(subscription != nil)
    }

    @Test func finishReleasesTheSubscriberWhileTheSubscriptionLivesOn() {
        weak var weakSubscriber: ForgetfulSubscriber?
        var subscription: (any Subscription)?
        do {
            let subscriber = ForgetfulSubscriber(initialDemand: nil)
            weakSubscriber = subscriber
            Factorial(count: 4).receive(
                subscriber: AnySubscriber<Term, Never>(
                    receiveSubscription: { subscription = $0 },
                    receiveValue: subscriber.receive(_:),
                    receiveCompletion: subscriber.receive(completion:)
                )
            )
        }
        #expect(weakSubscriber != nil)
        subscription?.request(.unlimited)
        #expect(weakSubscriber == nil)
        #expect(subscription != nil)
    }
}

@Suite(.offPool) struct SequenceProbeTests {
    @Test func producerPausesWhileTheSubscriberStalls() {
        let probe = SequenceProbe()
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(4096))
        Naturals(probe: probe).subscribe(subscriber)
        #expect(probe.produced == 4096)
        #expect(probe.produced == 4096)
        subscriber.request(.max(10))
        #expect(probe.produced == 4106)
        #expect(probe.requested == .max(4106))
        #expect(!probe.isCancelled)
        #expect(!probe.isFinished)
    }

    @Test func producedIncludesTheElementBeingReceived() {
        let probe = SequenceProbe()
        var seen: [Int] = []
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(3)) { _, _ in
            seen.append(probe.produced)
            return .none
        }
        Primes(probe: probe).subscribe(subscriber)
        #expect(seen == [1, 2, 3])
    }

    @Test func demandReturnedFromReceiveCountsAsRequested() {
        let probe = SequenceProbe()
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(1)) { _, term in
            term.index == 0 ? .max(2) : .none
        }
        Naturals(probe: probe).subscribe(subscriber)
        #expect(probe.requested == .max(3))
        #expect(probe.produced == 3)
    }

    @Test func cancelReachesTheProducer() {
        let probe = SequenceProbe()
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(1))
        Fibonacci(probe: probe).subscribe(subscriber)
        #expect(!probe.isCancelled)
        subscriber.cancel()
        #expect(probe.isCancelled)
        #expect(!probe.isFinished)
    }

    @Test func cancelAfterFinishingIsNotRecorded() {
        let probe = SequenceProbe()
        var subscription: (any Subscription)?
        Naturals(count: 1, probe: probe).receive(
            subscriber: AnySubscriber<Term, Never>(receiveSubscription: {
                subscription = $0
                $0.request(.unlimited)
            })
        )
        subscription?.cancel()
        #expect(probe.isFinished)
        #expect(!probe.isCancelled)
    }
}
