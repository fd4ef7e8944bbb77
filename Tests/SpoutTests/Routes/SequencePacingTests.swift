import Reactive
import Sequences
import TestSupport
import Testing

@testable import Spout

/// `interval` pacing on the virtual clock: the first element at once, then one per interval, and only on demand.
@Suite struct SequencePacingTests {
    @Test func theFirstElementGoesOutAtOnceAndEachLaterOneAnIntervalAfterThePrevious() {
        let scheduler = VirtualTimeScheduler()
        let subscriber = TrackingSubscriber<Term, Never>()
        PacedPublisher(
            upstream: SequencePublisher(kind: .fibonacci, start: 0, count: 4),
            interval: .milliseconds(100),
            scheduler: scheduler
        ).subscribe(subscriber)
        // Nothing advanced yet: the first element is there.
        #expect(subscriber.values.map(\.index) == [0])
        scheduler.advance(by: .milliseconds(99))
        #expect(subscriber.values.map(\.index) == [0])
        scheduler.advance(by: .milliseconds(1))
        #expect(subscriber.values.map(\.index) == [0, 1])
        scheduler.advance(by: .milliseconds(100))
        #expect(subscriber.values.map(\.index) == [0, 1, 2])
        scheduler.advance(by: .milliseconds(99))
        #expect(subscriber.values.map(\.index) == [0, 1, 2])
        #expect(subscriber.completion == nil)
        scheduler.advance(by: .milliseconds(1))
        #expect(subscriber.values.map(\.value.description) == ["0", "1", "1", "2"])
        #expect(subscriber.completion == .finished)
    }

    @Test func aResumedStreamAlsoStartsAtOnce() {
        let scheduler = VirtualTimeScheduler()
        let subscriber = TrackingSubscriber<Term, Never>()
        PacedPublisher(
            upstream: SequencePublisher(kind: .naturals, start: 7, count: 2),
            interval: .seconds(5),
            scheduler: scheduler
        ).subscribe(subscriber)
        #expect(subscriber.values.map(\.index) == [7])
        scheduler.advance(by: .seconds(5))
        #expect(subscriber.values.map(\.index) == [7, 8])
        #expect(subscriber.completion == .finished)
    }

    @Test func aReaderWithoutDemandPausesTheProducerAndGetsItsNextElementAtOnceWhenItAsks() {
        let scheduler = VirtualTimeScheduler()
        let probe = SequenceProbe()
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(1))
        PacedPublisher(
            upstream: SequencePublisher(kind: .naturals, start: 0, count: nil, probe: probe),
            interval: .milliseconds(10),
            scheduler: scheduler
        ).subscribe(subscriber)
        #expect(subscriber.values.map(\.index) == [0])
        scheduler.advance(by: .seconds(10))
        // A thousand intervals without demand: the producer made nothing more, nothing queued up.
        #expect(subscriber.values.map(\.index) == [0])
        #expect(probe.produced == 1)
        #expect(probe.requested == .max(1))
        // Its time has long come: it goes out as soon as it is asked for, the next one an interval later.
        subscriber.request(.max(2))
        #expect(subscriber.values.map(\.index) == [0, 1])
        scheduler.advance(by: .milliseconds(9))
        #expect(subscriber.values.map(\.index) == [0, 1])
        scheduler.advance(by: .milliseconds(1))
        #expect(subscriber.values.map(\.index) == [0, 1, 2])
        #expect(probe.produced == 3)
        subscriber.cancel()
        #expect(probe.isCancelled)
        scheduler.advance(by: .seconds(1))
        #expect(probe.produced == 3)
    }

    @Test func demandArrivingInsideReceiveIsHonouredWithoutRecursion() {
        let scheduler = VirtualTimeScheduler()
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .max(1)) { _, _ in .max(1) }
        PacedPublisher(
            upstream: SequencePublisher(kind: .naturals, start: 0, count: 3),
            interval: .milliseconds(1),
            scheduler: scheduler
        ).subscribe(subscriber)
        #expect(subscriber.values.map(\.index) == [0])
        scheduler.advance(by: .milliseconds(2))
        #expect(subscriber.values.map(\.index) == [0, 1, 2])
        #expect(subscriber.completion == .finished)
    }

    @Test func cancelBeforeTheWakeUpStopsEverything() {
        let scheduler = VirtualTimeScheduler()
        let probe = SequenceProbe()
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .unlimited)
        PacedPublisher(
            upstream: SequencePublisher(kind: .naturals, start: 0, count: nil, probe: probe),
            interval: .seconds(1),
            scheduler: scheduler
        ).subscribe(subscriber)
        subscriber.cancel()
        scheduler.advance(by: .seconds(5))
        #expect(subscriber.values.map(\.index) == [0])
        #expect(probe.produced == 1)
        #expect(probe.isCancelled)
    }
}
