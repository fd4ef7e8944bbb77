import Dispatch
import Reactive
import TestSupport
import Testing

@Suite struct MeasureIntervalTests {
    typealias Stride = VirtualTimeScheduler.SchedulerTimeType.Stride

    @Test func emitsTheTimeSinceSubscriptionThenBetweenValues() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Stride, Never>()
        subject.measureInterval(using: scheduler).subscribe(subscriber)
        scheduler.advance(by: .seconds(2))
        subject.send(1)
        scheduler.advance(by: .milliseconds(250))
        subject.send(2)
        subject.send(3)
        subject.send(completion: .finished)
        #expect(
            subscriber.history == [
                .subscription, .value(.seconds(2)), .value(.milliseconds(250)), .value(.seconds(0)),
                .completion(.finished),
            ]
        )
    }

    @Test func demandPassesThroughAndIsRespected() {
        let scheduler = VirtualTimeScheduler()
        let upstream = ManualPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Stride, Never>(initialDemand: .max(1)) { _, _ in .max(2) }
        upstream.measureInterval(using: scheduler).subscribe(subscriber)
        #expect(upstream.send(1) == .max(2))
        subscriber.request(.max(4))
        subscriber.cancel()
        #expect(upstream.subscription?.history == [.requested(.max(1)), .requested(.max(4)), .cancelled])
        upstream.send(2)
        #expect(subscriber.values == [.seconds(0)])
    }

    @Test func failurePassesThrough() {
        let scheduler = VirtualTimeScheduler()
        let subject = PassthroughSubject<Int, CodedError>()
        let subscriber = TrackingSubscriber<Stride, CodedError>()
        subject.measureInterval(using: scheduler).subscribe(subscriber)
        subject.send(completion: .failure(CodedError(code: 1)))
        #expect(subscriber.history == [.subscription, .completion(.failure(CodedError(code: 1)))])
    }

    @Test func chainIsReleasedAfterFinishAndAfterCancel() {
        let scheduler = VirtualTimeScheduler()
        weak var weakSubscription: AnyObject?
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Stride, Never>()
            subject.measureInterval(using: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subject.send(completion: .finished)
        }
        #expect(weakSubscription == nil)
        do {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = TrackingSubscriber<Stride, Never>()
            subject.measureInterval(using: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            subscriber.cancel()
        }
        #expect(weakSubscription == nil)
    }

    @Test func concurrentRequestsAndCancelAreSafe() {
        for _ in 0..<20 {
            let scheduler = VirtualTimeScheduler()
            let upstream = ManualPublisher<Int, Never>()
            let subscriber = OverlapCheckingSubscriber<Stride, Never>(initialDemand: .max(1))
            upstream.measureInterval(using: scheduler).subscribe(subscriber)
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                if index == 0 {
                    for value in 0..<100 { upstream.send(value) }
                } else {
                    subscriber.request(.max(1))
                    if index == 7 { subscriber.cancel() }
                }
            }
            let history = upstream.subscription?.history ?? []
            #expect(history.filter { $0 == .cancelled }.count == 1)
            #expect(subscriber.overlaps == 0)
        }
    }
}
