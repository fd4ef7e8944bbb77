import Dispatch
import Reactive
import Synchronization
import TestSupport

/// Test-local publishers and subscribers for the combining operators (zip, merge, flatMap, …).
///
/// Nested in a namespace so that their short names cannot clash with other suites' helpers;
/// each test file picks them up with `private typealias`.
enum CombiningTestKit {
    /// An error for tests.
    struct TestError: Error, Equatable, CustomStringConvertible {
        var code = 0
        var description: String { "TestError(\(code))" }
    }

    /// A publisher driven by hand: every subscriber gets a ``TrackingSubscription`` that records its
    /// requests, and the test calls ``send(_:)`` / ``send(completion:)``. It does not enforce demand:
    /// the test decides what to send.
    ///
    /// **Thread safety:** safe to call from any thread (sends to one subscriber are not serialized).
    final class HandPublisher<Output, Failure: Error>: Publisher, @unchecked Sendable {
        // @unchecked Sendable: `subscribers` and `tracked` are guarded by `lock`.
        private let lock = Lock()
        private var subscribers: [AnySubscriber<Output, Failure>] = []  // Guarded by lock.
        private var tracked: [TrackingSubscription] = []  // Guarded by lock.

        init() {}

        func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let subscription = TrackingSubscription()
            lock.withLock {
                subscribers.append(AnySubscriber(subscriber))
                tracked.append(subscription)
            }
            subscriber.receive(subscription: subscription)
        }

        /// The subscription handed to the latest subscriber.
        var subscription: TrackingSubscription? { lock.withLock { tracked.last } }

        /// Every subscription handed out, oldest first.
        var subscriptions: [TrackingSubscription] { lock.withLock { tracked } }

        /// Sends a value to every subscriber; returns the demand the last one returned.
        @discardableResult
        func send(_ value: Output) -> Subscribers.Demand {
            var demand = Subscribers.Demand.none
            for subscriber in lock.withLock({ subscribers }) {
                demand = subscriber.receive(value)
            }
            return demand
        }

        /// Sends a completion to every subscriber and forgets them.
        func send(completion: Subscribers.Completion<Failure>) {
            let current = lock.withLock { () -> [AnySubscriber<Output, Failure>] in
                defer { subscribers = [] }
                return subscribers
            }
            for subscriber in current {
                subscriber.receive(completion: completion)
            }
        }
    }

    /// A synchronous, demand-correct publisher of the integers in a range, like `range.publisher`.
    struct RangePublisher: Publisher {
        typealias Output = Int
        typealias Failure = Never

        let range: Range<Int>

        init(_ range: Range<Int>) { self.range = range }

        func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
            subscriber.receive(subscription: RangeSubscription(range, subscriber))
        }
    }

    /// The subscription of a ``RangePublisher``: a loop that one caller at a time runs.
    final class RangeSubscription<Downstream: Subscriber>: Subscription, @unchecked Sendable
    where Downstream.Input == Int, Downstream.Failure == Never {
        // @unchecked Sendable: every var is guarded by `lock`.
        private enum Step {
            case value(Int, Downstream)
            case finish(Downstream)
            case stop
        }

        private let lock = Lock()
        private var next: Int  // Guarded by lock.
        private let end: Int
        private var demand = Subscribers.Demand.none  // Guarded by lock.
        private var delivering = false  // Guarded by lock.
        private var downstream: Downstream?  // Guarded by lock.

        init(_ range: Range<Int>, _ downstream: Downstream) {
            next = range.lowerBound
            end = range.upperBound
            self.downstream = downstream
        }

        func request(_ newDemand: Subscribers.Demand) {
            let start = lock.withLock { () -> Bool in
                demand += newDemand
                guard !delivering, downstream != nil else { return false }
                delivering = true
                return true
            }
            guard start else { return }
            while true {
                let step = lock.withLock { () -> Step in
                    guard let downstream else { return .stop }
                    if next == end {
                        self.downstream = nil
                        return .finish(downstream)
                    }
                    guard demand > 0 else {
                        delivering = false
                        return .stop
                    }
                    demand -= 1
                    next += 1
                    return .value(next - 1, downstream)
                }
                switch step {
                case .value(let value, let downstream):
                    let more = downstream.receive(value)
                    lock.withLock { demand += more }
                case .finish(let downstream):
                    downstream.receive(completion: .finished)
                    return
                case .stop:
                    return
                }
            }
        }

        func cancel() {
            lock.withLock { downstream = nil }
        }
    }

    /// A subscriber that records values, counts completions, and notices overlapping calls.
    ///
    /// **Thread safety:** safe to call from any thread.
    final class SerialSubscriber<Input, Failure: Error>: Subscriber, @unchecked Sendable {
        // @unchecked Sendable: every var is guarded by `lock`; `inside` is atomic.
        private let lock = Lock()
        private let inside = Atomic<Int>(0)
        private let initialDemand: Subscribers.Demand
        private let demandPerValue: Subscribers.Demand
        private var storedValues: [Input] = []  // Guarded by lock.
        private var storedCompletions: [Subscribers.Completion<Failure>] = []  // Guarded by lock.
        private var storedOverlaps = 0  // Guarded by lock.
        private var subscription: (any Subscription)?  // Guarded by lock.
        private let done = TestSignal()

        init(initialDemand: Subscribers.Demand = .unlimited, demandPerValue: Subscribers.Demand = .none) {
            self.initialDemand = initialDemand
            self.demandPerValue = demandPerValue
        }

        var values: [Input] { lock.withLock { storedValues } }
        var completions: [Subscribers.Completion<Failure>] { lock.withLock { storedCompletions } }
        var overlaps: Int { lock.withLock { storedOverlaps } }

        /// Waits (bounded) for the first completion; returns whether it came.
        func waitForCompletion(seconds: Double = 10) -> Bool {
            done.wait(timeout: .seconds(seconds))
        }

        func receive(subscription: any Subscription) {
            lock.withLock { self.subscription = subscription }
            if initialDemand > 0 { subscription.request(initialDemand) }
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            enter()
            lock.withLock { storedValues.append(input) }
            leave()
            return demandPerValue
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            enter()
            lock.withLock { storedCompletions.append(completion) }
            leave()
            done.signal()
        }

        func request(_ demand: Subscribers.Demand) {
            lock.withLock { subscription }?.request(demand)
        }

        func cancel() {
            lock.withLock { subscription }?.cancel()
        }

        private func enter() {
            if inside.add(1, ordering: .acquiring).newValue != 1 {
                lock.withLock { storedOverlaps += 1 }
            }
        }

        private func leave() {
            inside.subtract(1, ordering: .releasing)
        }
    }
}
