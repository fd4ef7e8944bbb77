import Dispatch
import Reactive
import Synchronization
import TestSupport
import Testing

private struct TestError: Error, Equatable {}

@Suite struct PassthroughSubjectTests {
    @Test func deliversOnlyWhatEachSubscriberDemanded() {
        let subject = PassthroughSubject<Int, Never>()
        let two = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        let all = TrackingSubscriber<Int, Never>(initialDemand: .unlimited)
        let none = TrackingSubscriber<Int, Never>(initialDemand: nil)
        subject.subscribe(two)
        subject.subscribe(all)
        subject.subscribe(none)
        for value in 1...4 { subject.send(value) }
        subject.send(completion: .finished)
        #expect(two.history == [.subscription, .value(1), .value(2), .completion(.finished)])
        #expect(all.history == [.subscription, .value(1), .value(2), .value(3), .value(4), .completion(.finished)])
        #expect(none.history == [.subscription, .completion(.finished)])
    }

    @Test func valuesSentWithoutDemandAreDroppedNotBuffered() {
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: nil)
        subject.subscribe(subscriber)
        subject.send(1)
        subscriber.request(.max(1))
        subject.send(2)
        subject.send(3)
        #expect(subscriber.history == [.subscription, .value(2)])
    }

    @Test func demandReturnedFromReceiveAccumulates() {
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { _, value in
            value < 3 ? .max(1) : .none
        }
        subject.subscribe(subscriber)
        for value in 1...5 { subject.send(value) }
        #expect(subscriber.values == [1, 2, 3])
    }

    @Test func lateSubscriberGetsCompletionImmediately() {
        let subject = PassthroughSubject<Int, TestError>()
        subject.send(completion: .failure(TestError()))
        subject.send(1)
        subject.send(completion: .finished)
        let late = TrackingSubscriber<Int, TestError>()
        subject.subscribe(late)
        #expect(late.history == [.subscription, .completion(.failure(TestError()))])
    }

    @Test func cancelStopsDeliveryToThatSubscriberOnly() {
        let subject = PassthroughSubject<Int, Never>()
        let first = TrackingSubscriber<Int, Never>()
        let second = TrackingSubscriber<Int, Never>()
        subject.subscribe(first)
        subject.subscribe(second)
        subject.send(1)
        first.cancel()
        first.cancel()
        subject.send(2)
        subject.send(completion: .finished)
        #expect(first.history == [.subscription, .value(1)])
        #expect(second.history == [.subscription, .value(1), .value(2), .completion(.finished)])
    }

    @Test func reentrantSendIsDeliveredAfterTheCurrentValueNotNested() {
        let subject = PassthroughSubject<Int, Never>()
        let depth = LockedValue(0)
        let maxDepth = LockedValue(0)
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .unlimited) { _, value in
            depth.withLock { $0 += 1 }
            maxDepth.withLock { $0 = max($0, depth.withLock { $0 }) }
            if value < 5 { subject.send(value + 1) }
            depth.withLock { $0 -= 1 }
            return .none
        }
        subject.subscribe(subscriber)
        subject.send(1)
        #expect(subscriber.values == [1, 2, 3, 4, 5])
        #expect(maxDepth.withLock { $0 } == 1)
    }

    @Test func cancelInsideReceiveStopsDelivery() {
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .unlimited) { subscriber, value in
            if value == 2 { subscriber.cancel() }
            return .none
        }
        subject.subscribe(subscriber)
        for value in 1...4 { subject.send(value) }
        subject.send(completion: .finished)
        #expect(subscriber.history == [.subscription, .value(1), .value(2)])
    }

    @Test func requestInsideReceiveIsPickedUpWithoutRecursion() {
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { subscriber, value in
            subscriber.request(.max(1))
            if value == 1 { subject.send(2) }
            return .none
        }
        subject.subscribe(subscriber)
        subject.send(1)
        subject.send(3)
        #expect(subscriber.values == [1, 2, 3])
    }

    @Test func completionSentDuringDeliveryComesAfterTheValue() {
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .unlimited) { _, _ in
            subject.send(completion: .finished)
            subject.send(99)
            return .none
        }
        subject.subscribe(subscriber)
        subject.send(1)
        #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
    }

    @Test func upstreamSubscriptionIsAskedForUnlimitedOnceSomeoneWantsValues() {
        let subject = PassthroughSubject<Int, Never>()
        let upstream = TrackingSubscription()
        subject.send(subscription: upstream)
        #expect(upstream.history == [])
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        subject.subscribe(subscriber)
        #expect(upstream.history == [.requested(.unlimited)])
        let second = TrackingSubscription()
        subject.send(subscription: second)
        #expect(second.history == [.requested(.unlimited)])
        subject.send(completion: .finished)
        let third = TrackingSubscription()
        subject.send(subscription: third)
        #expect(third.history == [.cancelled])
    }

    @Test func cancellingTheSubjectSubscriptionCancelsUpstream() {
        let subject = PassthroughSubject<Int, Never>()
        let upstream = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.subscribe(subscriber)
        let cancellable = upstream.subscribe(subject)
        upstream.send(1)
        cancellable.cancel()
        upstream.send(2)
        #expect(subscriber.history == [.subscription, .value(1)])
    }

    @Test func sinkReceivesSentValues() {
        let subject = PassthroughSubject<String, Never>()
        let received = LockedValue<[String]>([])
        let cancellable = subject.sink { value in received.withLock { $0.append(value) } }
        subject.send("a")
        subject.send("b")
        cancellable.cancel()
        subject.send("c")
        #expect(received.withLock { $0 } == ["a", "b"])
    }

    @Test func subscriptionsAreFreedAfterCompletionAndCancel() {
        weak var weakSubject: PassthroughSubject<Int, Never>?
        weak var weakSubscription: AnyObject?
        weak var weakSubscriber: TrackingSubscriber<Int, Never>?
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.subscribe(subscriber)
            weakSubject = subject
            weakSubscriber = subscriber
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(1)
            subject.send(completion: .finished)
        }
        #expect(weakSubject == nil)
        #expect(weakSubscription == nil)
        #expect(weakSubscriber == nil)

        weak var weakSecondSubject: PassthroughSubject<Int, Never>?
        weak var weakSink: AnyObject?
        do {
            let subject = PassthroughSubject<Int, Never>()
            weakSecondSubject = subject
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.subscribe(subscriber)
            weakSink = subscriber
            subject.send(1)
            subscriber.cancel()
        }
        #expect(weakSecondSubject == nil)
        #expect(weakSink == nil)
    }

    @Test func subjectDeinitCancelsUpstream() {
        let upstream = TrackingSubscription()
        do {
            let subject = PassthroughSubject<Int, Never>()
            subject.send(subscription: upstream)
        }
        #expect(upstream.history == [.cancelled])
    }

    // MARK: Unlimited demand (values go out without the conduit's lock)

    @Test func switchingToUnlimitedDemandKeepsOrderAndDropsNothingAfter() {
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        subject.subscribe(subscriber)
        for value in 1...3 { subject.send(value) }
        subscriber.request(.unlimited)
        for value in 4...6 { subject.send(value) }
        subscriber.request(.max(1))
        subject.send(7)
        subject.send(completion: .finished)
        subject.send(8)
        #expect(
            subscriber.history == [
                .subscription, .value(1), .value(2), .value(4), .value(5), .value(6), .value(7),
                .completion(.finished),
            ]
        )
    }

    @Test func requestAndSendInsideReceiveUnderUnlimitedDemandKeepOrder() {
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .unlimited) { subscriber, value in
            subscriber.request(.max(1))
            if value == 1 { subject.send(2) }
            return .max(1)
        }
        subject.subscribe(subscriber)
        subject.send(1)
        subject.send(3)
        subject.send(4)
        #expect(subscriber.values == [1, 2, 3, 4])
    }

    @Test func concurrentSendsAndCancelUnderUnlimitedDemandDeliverNothingAfterCancelReturned() {
        for _ in 0..<20 {
            let subject = PassthroughSubject<Int, Never>()
            let cancelled = SerialCheckingSubscriber(initialDemand: .unlimited)
            let kept = SerialCheckingSubscriber(initialDemand: .unlimited)
            subject.subscribe(cancelled)
            subject.subscribe(kept)
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<500 {
                    subject.send(thread * 500 + index)
                    if thread == 3 && index == 250 { cancelled.cancel() }
                }
            }
            let afterCancel = cancelled.report
            for value in 0..<10 { subject.send(value) }
            subject.send(completion: .finished)
            #expect(cancelled.report == afterCancel)
            #expect(afterCancel.values < 2_000)
            #expect(afterCancel.completions == 0)
            #expect(afterCancel.overlaps == 0)
            #expect(kept.report == .init(values: 2_010, completions: 1, overlaps: 0))
        }
    }

    @Test func concurrentSendsAndCompletionUnderUnlimitedDemandEndWithOneCompletion() {
        for _ in 0..<20 {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .unlimited)
            subject.subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<300 {
                    subject.send(index)
                    if thread == 3 && index == 150 { subject.send(completion: .finished) }
                }
            }
            let history = subscriber.history
            #expect(history.filter { if case .completion = $0 { true } else { false } }.count == 1)
            #expect(history.last == .completion(.finished))
            #expect(history.count <= 1 + 1_200 + 1)
        }
    }

    @Test func concurrentSendsAreSerializedPerSubscriberAndRespectDemand() {
        let subject = PassthroughSubject<Int, Never>()
        let unlimited = SerialCheckingSubscriber(initialDemand: .unlimited)
        let limited = SerialCheckingSubscriber(initialDemand: .max(500))
        subject.subscribe(unlimited)
        subject.subscribe(limited)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<1_000 {
                subject.send(thread * 1_000 + index)
                if index == 500 && thread == 3 { limited.request(.max(100)) }
            }
        }
        subject.send(completion: .finished)
        #expect(unlimited.report == .init(values: 8_000, completions: 1, overlaps: 0))
        #expect(limited.report == .init(values: 600, completions: 1, overlaps: 0))
        #expect(Set(unlimited.received).count == 8_000)
    }

    @Test func concurrentSendCancelAndCompleteNeverOverDeliver() {
        for _ in 0..<20 {
            let subject = PassthroughSubject<Int, Never>()
            let subscribers = (0..<4).map { _ in SerialCheckingSubscriber(initialDemand: .max(50)) }
            for subscriber in subscribers { subject.subscribe(subscriber) }
            DispatchQueue.concurrentPerform(iterations: 6) { thread in
                for index in 0..<200 {
                    subject.send(index)
                    if thread == 4 && index == 100 { subscribers[0].cancel() }
                    if thread == 5 && index == 150 { subject.send(completion: .finished) }
                    if thread == 2 { subscribers[1].request(.max(1)) }
                }
            }
            subject.send(completion: .finished)
            for subscriber in subscribers {
                let report = subscriber.report
                #expect(report.overlaps == 0)
                #expect(report.completions <= 1)
            }
            #expect(subscribers[2].report.values <= 50)
            #expect(subscribers[1].report.values <= 250)
            #expect(subscribers[3].report.completions == 1)
        }
    }
    // A subject with one subscriber sends on a lock-free path (its solo gate); these cover the
    // moments that path opens and closes: a second subscriber arriving or the only one leaving,
    // from inside a value's delivery or from other threads meanwhile.

    @Test func subscriberAttachedInsideTheOnlySubscribersReceiveGetsTheLaterValues() {
        let subject = PassthroughSubject<Int, Never>()
        let late = TrackingSubscriber<Int, Never>()
        let first = TrackingSubscriber<Int, Never>(initialDemand: .unlimited) { _, value in
            if value == 2 { subject.subscribe(late) }
            return .none
        }
        subject.subscribe(first)
        for value in 1...4 { subject.send(value) }
        subject.send(completion: .finished)
        #expect(first.values == [1, 2, 3, 4])
        #expect(late.history == [.subscription, .value(3), .value(4), .completion(.finished)])
    }

    @Test func aNewOnlySubscriberAfterTheOnlyOneCancelledGetsTheValuesAndTheOldOneNone() {
        let subject = PassthroughSubject<Int, Never>()
        let first = TrackingSubscriber<Int, Never>()
        subject.subscribe(first)
        subject.send(1)
        first.cancel()
        subject.send(2)
        let second = TrackingSubscriber<Int, Never>()
        subject.subscribe(second)
        subject.send(3)
        second.cancel()
        let third = TrackingSubscriber<Int, Never>()
        subject.subscribe(third)
        subject.send(4)
        subject.send(completion: .finished)
        #expect(first.history == [.subscription, .value(1)])
        #expect(second.history == [.subscription, .value(3)])
        #expect(third.history == [.subscription, .value(4), .completion(.finished)])
    }

    @Test func theOnlySubscriberCancellingInsideReceiveIsReleasedWithNoFurtherSend() {
        let subject = PassthroughSubject<Int, Never>()
        weak var released: TrackingSubscriber<Int, Never>?
        do {
            let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .unlimited) { subscriber, _ in
                subscriber.cancel()
                return .none
            }
            released = subscriber
            subject.subscribe(subscriber)
            subject.send(1)
            #expect(subscriber.values == [1])
        }
        #expect(released == nil)
        withExtendedLifetime(subject) {}
    }

    /// Twenty rounds of: a subject whose only subscriber has unlimited demand, 1,000 values sent from each of
    /// `senders` threads while one more thread runs `alongside` with the subject and that subscriber, then the
    /// completion. The subscriber must get every value once, one call at a time, then the completion.
    private func expectTheOnlySubscriberGetsEverySend(
        senders: Int,
        alongside: @escaping @Sendable (PassthroughSubject<Int, Never>, SerialCheckingSubscriber) -> Void
    ) {
        for _ in 0..<20 {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = SerialCheckingSubscriber(initialDemand: .unlimited)
            subject.subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: senders + 1) { thread in
                guard thread < senders else { return alongside(subject, subscriber) }
                for index in 0..<1_000 { subject.send(thread * 1_000 + index) }
            }
            subject.send(completion: .finished)
            #expect(subscriber.report == .init(values: senders * 1_000, completions: 1, overlaps: 0))
            #expect(Set(subscriber.received).count == senders * 1_000)
        }
    }

    @Test func theOnlySubscriberGetsEverySendWhileOthersComeAndGoOnOtherThreads() {
        expectTheOnlySubscriberGetsEverySend(senders: 3) { subject, _ in
            for _ in 0..<200 {
                let visitor = SerialCheckingSubscriber(initialDemand: .unlimited)
                subject.subscribe(visitor)
                visitor.cancel()
                #expect(visitor.report.overlaps == 0)
            }
        }
    }

    // The solo path taken back by the conduit itself (a request from another thread) while a sender
    // delivers on it: that sender drains, and the path is lent again after.
    @Test func theOnlySubscriberGetsEverySendWhileItRequestsMoreFromAnotherThread() {
        expectTheOnlySubscriberGetsEverySend(senders: 2) { _, subscriber in
            for _ in 0..<500 { subscriber.request(.max(1)) }
        }
    }

    // The only subscriber cancelled from another thread while values go out on the solo path, then a new
    // only subscriber: the first gets no delivery that starts after its cancel returned, the second gets
    // every value sent after it subscribed (the path is lent to its conduit once the first's is done).
    @Test func aSubscriberCancelledDuringSoloDeliveriesIsReplacedCleanly() {
        for _ in 0..<20 {
            let subject = PassthroughSubject<Int, Never>()
            let first = SerialCheckingSubscriber(initialDemand: .unlimited)
            subject.subscribe(first)
            let afterCancel = Mutex<SerialCheckingSubscriber.Report?>(nil)
            DispatchQueue.concurrentPerform(iterations: 2) { thread in
                if thread == 1 {
                    first.cancel()
                    afterCancel.withLock { $0 = first.report }
                    return
                }
                for index in 0..<2_000 { subject.send(index) }
            }
            let second = SerialCheckingSubscriber(initialDemand: .unlimited)
            subject.subscribe(second)
            for index in 0..<100 { subject.send(index) }
            subject.send(completion: .finished)
            // A delivery already under way when `cancel` returned may still end after it; no other.
            let valuesAtCancel = afterCancel.withLock { $0 }?.values ?? -1
            #expect(valuesAtCancel >= 0)
            #expect(first.report.values <= valuesAtCancel + 1)
            #expect(first.report.completions == 0)
            #expect(first.report.overlaps == 0)
            #expect(second.report == .init(values: 100, completions: 1, overlaps: 0))
        }
    }
}
