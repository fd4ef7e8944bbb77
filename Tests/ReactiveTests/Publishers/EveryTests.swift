import Reactive
import TestSupport
import Testing

@Suite struct EveryTests {
    private typealias Time = VirtualTimeScheduler.SchedulerTimeType

    @Test func ticksEveryIntervalOnVirtualTime() {
        let scheduler = VirtualTimeScheduler()
        let subscriber = TrackingSubscriber<Time, Never>()
        Publishers.Every(interval: .seconds(1), scheduler: scheduler).subscribe(subscriber)
        #expect(subscriber.history.count == 1)
        scheduler.advance(by: .milliseconds(2_500))
        #expect(subscriber.values == [Time(nanoseconds: 1_000_000_000), Time(nanoseconds: 2_000_000_000)])
        scheduler.advance(by: .milliseconds(500))
        #expect(subscriber.values.count == 3)
        subscriber.cancel()
    }

    @Test func ticksWithoutDemandAreDropped() {
        let scheduler = VirtualTimeScheduler()
        let subscriber = TrackingSubscriber<Time, Never>(initialDemand: .max(1))
        Publishers.Every(interval: .seconds(1), scheduler: scheduler).subscribe(subscriber)
        scheduler.advance(by: .seconds(3))
        #expect(subscriber.values == [Time(nanoseconds: 1_000_000_000)])
        subscriber.request(.max(1))
        scheduler.advance(by: .seconds(1))
        #expect(subscriber.values == [Time(nanoseconds: 1_000_000_000), Time(nanoseconds: 4_000_000_000)])
        subscriber.cancel()
    }

    @Test func demandReturnedFromReceiveKeepsItTicking() {
        let scheduler = VirtualTimeScheduler()
        let subscriber = TrackingSubscriber<Time, Never>(initialDemand: .max(1)) { _, _ in .max(1) }
        Publishers.Every(interval: .milliseconds(100), scheduler: scheduler).subscribe(subscriber)
        scheduler.advance(by: .seconds(1))
        #expect(subscriber.values.count == 10)
        subscriber.cancel()
    }

    @Test func cancelStopsTheScheduleAndFreesTheSubscription() {
        let scheduler = VirtualTimeScheduler()
        weak var weakSubscription: AnyObject?
        weak var weakSubscriber: TrackingSubscriber<Time, Never>?
        do {
            let subscriber = TrackingSubscriber<Time, Never>()
            Publishers.Every(interval: .seconds(1), scheduler: scheduler).subscribe(subscriber)
            weakSubscription = subscriber.subscription as AnyObject?
            weakSubscriber = subscriber
            #expect(scheduler.pendingActionCount == 1)
            scheduler.advance(by: .seconds(1))
            subscriber.cancel()
            #expect(scheduler.pendingActionCount == 0)
            scheduler.advance(by: .seconds(5))
            #expect(subscriber.values.count == 1)
        }
        #expect(weakSubscription == nil)
        #expect(weakSubscriber == nil)
    }

    @Test func cancelInsideReceiveStopsTicking() {
        let scheduler = VirtualTimeScheduler()
        let subscriber = TrackingSubscriber<Time, Never> { subscriber, _ in
            subscriber.cancel()
            return .none
        }
        Publishers.Every(interval: .seconds(1), scheduler: scheduler).subscribe(subscriber)
        scheduler.advance(by: .seconds(3))
        #expect(subscriber.values.count == 1)
        #expect(scheduler.pendingActionCount == 0)
    }

    @Test func eachSubscriberHasItsOwnSchedule() {
        let scheduler = VirtualTimeScheduler()
        let every = Publishers.Every(interval: .seconds(2), scheduler: scheduler)
        let first = TrackingSubscriber<Time, Never>()
        every.subscribe(first)
        scheduler.advance(by: .seconds(1))
        let second = TrackingSubscriber<Time, Never>()
        every.subscribe(second)
        scheduler.advance(by: .seconds(3))
        #expect(first.values == [Time(nanoseconds: 2_000_000_000), Time(nanoseconds: 4_000_000_000)])
        #expect(second.values == [Time(nanoseconds: 3_000_000_000)])
        first.cancel()
        second.cancel()
    }
}
