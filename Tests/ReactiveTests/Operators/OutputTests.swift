import Reactive
import TestSupport
import Testing

/// A publisher that never ends: it counts up for as long as it is asked, and records whether it
/// was cancelled.
private final class Endless: Publisher, @unchecked Sendable {
    // @unchecked Sendable: test-only; used from one thread.
    typealias Output = Int
    typealias Failure = Never

    var cancelled = false
    var requests: [Subscribers.Demand] = []

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
        subscriber.receive(subscription: Subscription(owner: self, downstream: subscriber))
    }

    private final class Subscription<Downstream: Subscriber>: Reactive.Subscription where Downstream.Input == Int {
        let owner: Endless
        var downstream: Downstream?
        var demand = Subscribers.Demand.none
        var next = 0
        var delivering = false

        init(owner: Endless, downstream: Downstream) {
            self.owner = owner
            self.downstream = downstream
        }

        func request(_ demand: Subscribers.Demand) {
            owner.requests.append(demand)
            self.demand += demand
            guard !delivering else { return }
            delivering = true
            while self.demand > 0, let downstream {
                self.demand -= 1
                next += 1
                self.demand += downstream.receive(next)
            }
            delivering = false
        }

        func cancel() {
            owner.cancelled = true
            downstream = nil
        }
    }
}

@Suite struct OutputTests {
    @Test func prefixPublishesTheFirstValuesThenFinishes() {
        let subscriber = TrackingSubscriber<Int, Never>()
        (1...10).publisher.prefix(3).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3), .completion(.finished)])
    }

    @Test func prefixCancelsAnEndlessUpstreamFromInsideReceive() {
        let upstream = Endless()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.prefix(5).subscribe(subscriber)
        #expect(subscriber.values == [1, 2, 3, 4, 5])
        #expect(subscriber.completion == .finished)
        #expect(upstream.cancelled)
    }

    @Test func prefixPassesDownstreamDemandThroughAndCancelsAtTheLastValue() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(10))
        upstream.prefix(3).subscribe(subscriber)
        upstream.send(1)
        upstream.send(2)
        upstream.send(3)
        upstream.send(4)
        #expect(upstream.subscription.history == [.requested(.max(10)), .cancelled])
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .value(3), .completion(.finished)])
    }

    @Test func prefixZeroFinishesOnSubscription() {
        let upstream = DrivenPublisher<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        upstream.prefix(0).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.finished)])
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func prefixLongerThanUpstreamFinishesWithUpstream() {
        let subscriber = TrackingSubscriber<Int, Never>()
        [1, 2].publisher.prefix(5).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.finished)])
    }

    @Test func cancelInsideReceiveOfTheLastValueSendsNoCompletion() {
        let subscriber = TrackingSubscriber<Int, Never> { subscriber, value in
            if value == 2 { subscriber.cancel() }
            return .none
        }
        (1...10).publisher.prefix(5).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1), .value(2)])
    }

    @Test func outputAtPublishesOneValueAndDropsTheOnesBefore() {
        let upstream = DrivenPublisher<String, Never>()
        let subscriber = TrackingSubscriber<String, Never>(initialDemand: .max(1))
        upstream.output(at: 2).subscribe(subscriber)
        #expect(upstream.send("a") == .max(1))
        #expect(upstream.send("b") == .max(1))
        upstream.send("c")
        #expect(subscriber.history == [.subscription, .value("c"), .completion(.finished)])
        #expect(upstream.subscription.history == [.requested(.max(1)), .cancelled])
    }

    @Test func outputInRangePublishesTheRange() {
        var closed: [Int] = []
        var open: [Int] = []
        var from: [Int] = []
        _ = (0..<10).publisher.output(in: 2...4).sink { closed.append($0) }
        _ = (0..<10).publisher.output(in: 2..<4).sink { open.append($0) }
        _ = (0..<10).publisher.output(in: 7...).sink { from.append($0) }
        #expect(closed == [2, 3, 4])
        #expect(open == [2, 3])
        #expect(from == [7, 8, 9])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.prefix(3) } == (true, true))
            #expect(releases(ending) { $0.prefix(1) } == (true, true))
            #expect(releases(ending) { $0.output(at: 5) } == (true, true))
        }
    }

    @Test func racingRequestsAndCancelNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceRequestsAgainstCancel((0..<100_000).publisher.prefix(500))
            #expect(report.values <= min(requested, 500))
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
            #expect(report.valuesAfterCompletion == 0)
        }
    }

    @Test func racingSendsAndRequestsNeverOverDeliver() {
        for _ in 0..<20 {
            let (report, requested) = raceSendsAgainstRequests { $0.prefix(50) }
            #expect(report.values <= min(requested, 50))
            #expect(report.completions <= 1)
            #expect(report.overlaps == 0)
            #expect(report.valuesAfterCompletion == 0)
        }
    }
}
