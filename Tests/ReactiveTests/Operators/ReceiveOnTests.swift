import Dispatch
import Reactive
import TestSupport
import Testing

@Suite(.offPool) struct ReceiveOnTests {
    @Test func valuesAndCompletionArriveOnlyWhenTheSchedulerRuns() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.receive(on: scheduler).subscribe(subscriber)
        subject.send(1)
        subject.send(2)
        subject.send(completion: .finished)
        #expect(subscriber.history == [.subscription])
        scheduler.advance()
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
    }

    @Test func failureIsDeliveredOnTheSchedulerAfterEarlierValues() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, CodedError>()
        let subscriber = TrackingSubscriber<Int, CodedError>()
        subject.receive(on: scheduler).subscribe(subscriber)
        subject.send(1)
        subject.send(completion: .failure(CodedError(code: 7)))
        subject.send(2)
        scheduler.advance()
        #expect(subscriber.history == [.subscription, .value(1), .completion(.failure(CodedError(code: 7)))])
    }

    @Test func requestsAndCancelGoUpstreamSynchronously() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        upstream.receive(on: scheduler).subscribe(subscriber)
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(3))
        subscriber.cancel()
        #expect(upstream.subscription?.history == [.requested(.max(2)), .requested(.max(3)), .cancelled])
        #expect(scheduler.pendingActionCount == 0)
    }

    @Test func demandReturnedFromReceiveIsForwardedUpstream() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { _, _ in .max(1) }
        upstream.receive(on: scheduler).subscribe(subscriber)
        upstream.send(1)
        upstream.send(2)
        #expect(upstream.subscription?.history == [.requested(.max(1))])
        scheduler.advance()
        #expect(upstream.subscription?.history == [.requested(.max(1)), .requested(.max(1)), .requested(.max(1))])
        #expect(subscriber.values == [1, 2])
    }

    @Test func cancelDropsDeliveriesAlreadyScheduled() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.receive(on: scheduler).subscribe(subscriber)
        upstream.send(1)
        subscriber.cancel()
        scheduler.advance()
        #expect(subscriber.history == [.subscription])
        #expect(upstream.subscription?.history == [.requested(.unlimited), .cancelled])
    }

    @Test func cancelAfterUpstreamFinishedDropsTheScheduledCompletion() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.receive(on: scheduler).subscribe(subscriber)
        subject.send(1)
        subject.send(completion: .finished)
        subscriber.cancel()
        scheduler.advance()
        #expect(subscriber.history == [.subscription])
    }

    @Test func cancelInsideReceiveStopsLaterDeliveries() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never> { subscriber, _ in
            subscriber.cancel()
            return .none
        }
        subject.receive(on: scheduler).subscribe(subscriber)
        subject.send(1)
        subject.send(2)
        subject.send(completion: .finished)
        scheduler.advance()
        #expect(subscriber.history == [.subscription, .value(1)])
    }

    @Test func marbleTimingIsKept() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<String, MarbleError>()
        let subscriber = TimedSubscriber<String, MarbleError>(scheduler: scheduler)
        subject.receive(on: scheduler).subscribe(subscriber)
        Marble.feed("-a-b---c#", into: subject, on: scheduler)
        scheduler.run()
        #expect(subscriber.marble == "-a-b---c#")
    }

    @Test func chainIsReleasedAfterFinishAndAfterCancel() {
        let scheduler = VirtualTimeScheduler()
        weak var weakSubscription: AnyObject?
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.receive(on: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(1)
            subject.send(completion: .finished)
            scheduler.advance()
            #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
        }
        #expect(weakSubscription == nil)
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Int, Never>()
            subject.receive(on: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(1)
            subscriber.cancel()
            scheduler.advance()
        }
        #expect(weakSubscription == nil)
    }

    @Test func concurrentSchedulerNeverDeliversTwoCallsAtOnceAndKeepsOrder() {
        let scheduler = ConcurrentTestScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = OverlapCheckingSubscriber<Int, Never>()
        upstream.receive(on: scheduler).subscribe(subscriber)
        for value in 0..<2_000 { upstream.send(value) }
        upstream.send(completion: .finished)
        #expect(scheduler.waitUntilIdle())
        #expect(subscriber.received == Array(0..<2_000))
        #expect(subscriber.completions == 1)
        #expect(subscriber.overlaps == 0)
    }

    @Test func concurrentSendsRequestsAndCancelNeverOverlapOrOverDeliver() {
        for _ in 0..<20 {
            let scheduler = ConcurrentTestScheduler()
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = OverlapCheckingSubscriber<Int, Never>(initialDemand: .max(10))
            subject.receive(on: scheduler).subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                for value in 0..<50 {
                    subject.send(index * 100 + value)
                    if value % 10 == 0 { subscriber.request(.max(1)) }
                }
                if index == 5 { subscriber.cancel() }
                subject.send(completion: .finished)
            }
            #expect(scheduler.waitUntilIdle())
            #expect(subscriber.received.count <= 10 + 8 * 5)
            #expect(subscriber.completions <= 1)
            #expect(subscriber.overlaps == 0)
        }
    }

    @Test func realDispatchQueueDeliversEverythingOnTheQueueInOrder() {
        let queue = DispatchQueue(label: "receive-on-test")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let done = TestSignal()
        let subject = PassthroughSubject<Int, Never>()
        let onQueue = OverlapCheckingSubscriber<Bool, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(
            onValue: { _, _ in
                _ = onQueue.receive(DispatchQueue.getSpecific(key: key) == true)
                return .none
            },
            onCompletion: { _ in
                _ = onQueue.receive(DispatchQueue.getSpecific(key: key) == true)
                done.signal()
            }
        )
        onQueue.receive(subscription: Subscriptions.empty)
        subject.receive(on: queue).subscribe(subscriber)
        DispatchQueue.global().async {
            for value in 0..<500 { subject.send(value) }
            subject.send(completion: .finished)
        }
        #expect(done.wait(timeout: .seconds(10)))
        #expect(subscriber.values == Array(0..<500))
        #expect(subscriber.completion == .finished)
        #expect(onQueue.received.count == 501)
        #expect(onQueue.received.allSatisfy { $0 })
    }

    @Test func immediateSchedulerWithReentrantDemandDeliversInOrderWithoutNesting() {
        var depth = 0
        var maxDepth = 0
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(1)) { subscriber, _ in
            depth += 1
            maxDepth = max(maxDepth, depth)
            subscriber.request(.max(1))
            depth -= 1
            return .none
        }
        (1...1_000).publisher.receive(on: ImmediateScheduler.shared).subscribe(subscriber)
        #expect(subscriber.values == Array(1...1_000))
        #expect(subscriber.completion == .finished)
        #expect(maxDepth == 1)
    }
}
