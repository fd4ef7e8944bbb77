import Reactive
import TestSupport
import Testing

/// What `debounce`, `throttle` and `timeout` ask of a custom scheduler — how often they read `now`
/// and `minimumTolerance`, which `schedule` variant they call and with which options — since a
/// scheduler can observe it (Combine's pattern: one `now` per event that schedules, tolerance
/// `minimumTolerance`, the operator's options passed through except to `debounce`'s completion;
/// `throttle` takes no options).
@Suite struct SchedulerCallPatternTests {
    /// A virtual-time scheduler that records what it is asked.
    final class RecordingScheduler: Scheduler, @unchecked Sendable {
        // @unchecked Sendable: the tests drive it from one thread.
        typealias SchedulerTimeType = VirtualTimeScheduler.SchedulerTimeType
        typealias SchedulerOptions = String

        let base = VirtualTimeScheduler()
        private(set) var calls: [String] = []

        var now: SchedulerTimeType {
            calls.append("now")
            return base.now
        }

        var minimumTolerance: SchedulerTimeType.Stride {
            calls.append("minimumTolerance")
            return base.minimumTolerance
        }

        func schedule(options: String?, _ action: @escaping () -> Void) {
            calls.append("schedule(options: \(options ?? "nil"))")
            base.schedule(options: nil, action)
        }

        func schedule(
            after date: SchedulerTimeType,
            tolerance: SchedulerTimeType.Stride,
            options: String?,
            _ action: @escaping () -> Void
        ) {
            calls.append("schedule(after:tolerance:options: \(options ?? "nil"))")
            base.schedule(after: date, tolerance: tolerance, options: nil, action)
        }

        func schedule(
            after date: SchedulerTimeType,
            interval: SchedulerTimeType.Stride,
            tolerance: SchedulerTimeType.Stride,
            options: String?,
            _ action: @escaping () -> Void
        ) -> any Cancellable {
            calls.append("schedule(after:interval:tolerance:options: \(options ?? "nil"))")
            return base.schedule(after: date, interval: interval, tolerance: tolerance, options: nil, action)
        }

        func takeCalls() -> [String] {
            defer { calls = [] }
            return calls
        }
    }

    @Test func debounceReadsNowAndToleranceOncePerValueAndPassesItsOptionsToItsTimersOnly() {
        let scheduler = RecordingScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.debounce(for: .seconds(1), scheduler: scheduler, options: "debounce").subscribe(subscriber)
        #expect(scheduler.takeCalls() == [])
        subject.send(1)
        #expect(
            scheduler.takeCalls() == [
                "now", "minimumTolerance", "schedule(after:interval:tolerance:options: debounce)",
            ]
        )
        scheduler.base.advance(by: .seconds(1))
        subject.send(completion: .finished)
        #expect(scheduler.takeCalls() == ["schedule(options: nil)"])  // Combine schedules it without options
        _ = scheduler.base.run()
        #expect(subscriber.history == [.subscription, .value(1), .completion(.finished)])
    }

    @Test func throttleReadsNowOncePerValueAndPerEmissionAndPassesNoOptions() {
        let scheduler = RecordingScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.throttle(for: .seconds(1), scheduler: scheduler, latest: true).subscribe(subscriber)
        subject.send(1)
        #expect(scheduler.takeCalls() == ["now", "schedule(options: nil)"])
        scheduler.base.advance()
        #expect(scheduler.takeCalls() == ["now"])  // the emission starts the next interval
        subject.send(2)
        #expect(scheduler.takeCalls() == ["now", "minimumTolerance", "schedule(after:tolerance:options: nil)"])
        subject.send(3)  // an emission is pending: it only replaces the pending value
        #expect(scheduler.takeCalls() == ["now"])
        _ = scheduler.base.run()
        #expect(subscriber.values == [1, 3])
    }

    @Test func timeoutArmsOneRepeatingTimerPerValueWithItsOptions() {
        let scheduler = RecordingScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.timeout(.seconds(5), scheduler: scheduler, options: "timeout").subscribe(subscriber)
        #expect(
            scheduler.takeCalls() == [
                "now", "minimumTolerance", "schedule(after:interval:tolerance:options: timeout)",
            ]
        )
        subject.send(1)  // Combine restarts the timer first, then schedules the value
        #expect(
            scheduler.takeCalls() == [
                "now", "minimumTolerance", "schedule(after:interval:tolerance:options: timeout)",
                "schedule(options: timeout)",
            ]
        )
        subscriber.cancel()
    }

    @Test func debounceReadsNowAndToleranceAgainForEveryValueThatRestartsTheWait() {
        let scheduler = RecordingScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.debounce(for: .seconds(1), scheduler: scheduler, options: "d").subscribe(subscriber)
        let arm = ["now", "minimumTolerance", "schedule(after:interval:tolerance:options: d)"]
        subject.send(1)
        #expect(scheduler.takeCalls() == arm)
        scheduler.base.advance(by: .milliseconds(500))
        subject.send(2)  // within the wait: a new timer, from a fresh reading of `now`
        #expect(scheduler.takeCalls() == arm)
        scheduler.base.advance(by: .seconds(1))
        #expect(subscriber.values == [2])
        #expect(scheduler.takeCalls() == [])  // the emission itself asks nothing of the scheduler
        subscriber.cancel()
        #expect(scheduler.takeCalls() == [])
    }

    @Test func throttleWithoutLatestAsksTheSchedulerWhatItAsksWithLatest() {
        let scheduler = RecordingScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.throttle(for: .seconds(1), scheduler: scheduler, latest: false).subscribe(subscriber)
        subject.send(1)
        #expect(scheduler.takeCalls() == ["now", "schedule(options: nil)"])
        scheduler.base.advance()
        #expect(scheduler.takeCalls() == ["now"])
        subject.send(2)
        #expect(scheduler.takeCalls() == ["now", "minimumTolerance", "schedule(after:tolerance:options: nil)"])
        subject.send(3)
        #expect(scheduler.takeCalls() == ["now"])
        _ = scheduler.base.run()
        #expect(subscriber.values == [1, 2])  // latest: false keeps the first of the window
    }

    @Test func timeoutDeliversItsCompletionThroughTheSchedulerWithItsOptions() {
        let scheduler = RecordingScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.timeout(.seconds(5), scheduler: scheduler, options: "t").subscribe(subscriber)
        _ = scheduler.takeCalls()
        subject.send(completion: .finished)
        #expect(scheduler.takeCalls() == ["schedule(options: t)"])
        _ = scheduler.base.run()
        #expect(subscriber.completion == .finished)
        #expect(scheduler.takeCalls() == [])
    }

    @Test func timeoutThatFiresAsksNothingMoreOfTheScheduler() {
        let scheduler = RecordingScheduler()
        let subject = PassthroughSubject<Int, Never>()
        let subscriber = TrackingSubscriber<Int, Never>()
        subject.timeout(.seconds(5), scheduler: scheduler, options: "t").subscribe(subscriber)
        _ = scheduler.takeCalls()
        scheduler.base.advance(by: .seconds(5))
        #expect(subscriber.completion == .finished)
        #expect(scheduler.takeCalls() == [])
    }
}
