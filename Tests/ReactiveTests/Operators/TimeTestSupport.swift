import Dispatch
import Reactive
import Synchronization
import TestSupport

// Helpers for the time-operator tests: a hand-driven upstream, a subscriber that records the
// virtual time of every event, marble strings, and a scheduler that really runs actions concurrently.

/// The error the marble `#` fails with.
struct MarbleError: Error, Equatable, CustomStringConvertible {
    var description: String { "MarbleError" }
}

/// A test error with a code, so tests can tell attempts apart.
struct CodedError: Error, Equatable, CustomStringConvertible {
    var code: Int
    var description: String { "CodedError(\(code))" }
}

/// One second of virtual time: the length of a marble tick.
let tick = VirtualTimeScheduler.SchedulerTimeType.Stride.seconds(1)

/// The virtual time `seconds` seconds after start.
func at(_ seconds: Double) -> VirtualTimeScheduler.SchedulerTimeType {
    VirtualTimeScheduler.SchedulerTimeType(nanoseconds: Int(seconds * 1e9))
}

/// A publisher driven by hand: every subscriber gets a ``TrackingSubscription`` (recording what it
/// requests and whether it cancelled), and the test sends values and completions to the latest one,
/// ignoring demand (the operator under test is what must respect it).
///
/// **Thread safety:** safe to call from any thread.
final class ManualPublisher<Output, Failure: Error>: Publisher, @unchecked Sendable {
    // @unchecked Sendable: `connections` is only touched inside `lock`.
    private let lock = Lock()
    private var connections: [(AnySubscriber<Output, Failure>, TrackingSubscription)] = []  // Guarded by lock.
    private let onSubscribe: ((ManualPublisher, Int) -> Void)?

    /// - Parameter onSubscribe: Runs after each subscription is handed out, with the subscription's index.
    init(onSubscribe: ((ManualPublisher, Int) -> Void)? = nil) {
        self.onSubscribe = onSubscribe
    }

    /// How many subscribers subscribed so far.
    var subscriptionCount: Int { lock.withLock { connections.count } }

    /// The subscriptions handed out, in order.
    var subscriptions: [TrackingSubscription] { lock.withLock { connections.map(\.1) } }

    /// The latest subscription handed out.
    var subscription: TrackingSubscription? { subscriptions.last }

    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        let subscription = TrackingSubscription()
        let index = lock.withLock { () -> Int in
            connections.append((AnySubscriber(subscriber), subscription))
            return connections.count - 1
        }
        subscriber.receive(subscription: subscription)
        onSubscribe?(self, index)
    }

    /// Sends a value to the latest subscriber; returns the demand it returned.
    @discardableResult
    func send(_ value: Output) -> Subscribers.Demand {
        guard let subscriber = lock.withLock({ connections.last?.0 }) else { return .none }
        return subscriber.receive(value)
    }

    func send(completion: Subscribers.Completion<Failure>) {
        lock.withLock { connections.last?.0 }?.receive(completion: completion)
    }
}

/// A subscriber that records each event with the virtual time it arrived at.
///
/// **Thread safety:** safe to call from any thread.
final class TimedSubscriber<Input, Failure: Error>: Subscriber, @unchecked Sendable {
    // @unchecked Sendable: `events` and `subscription` are only touched inside `lock`.
    typealias Event = TrackingSubscriber<Input, Failure>.Event

    private let scheduler: VirtualTimeScheduler
    private let initialDemand: Subscribers.Demand?
    private let onValue: (Input) -> Subscribers.Demand
    private let lock = Lock()
    private var events: [(VirtualTimeScheduler.SchedulerTimeType, Event)] = []  // Guarded by lock.
    private var storedSubscription: (any Subscription)?  // Guarded by lock.

    init(
        scheduler: VirtualTimeScheduler,
        initialDemand: Subscribers.Demand? = .unlimited,
        onValue: @escaping (Input) -> Subscribers.Demand = { _ in .none }
    ) {
        self.scheduler = scheduler
        self.initialDemand = initialDemand
        self.onValue = onValue
    }

    /// Every event with its time.
    var timedHistory: [(VirtualTimeScheduler.SchedulerTimeType, Event)] { lock.withLock { events } }

    /// Every event after the subscription, as "t=<seconds>:<event>" strings.
    var timeline: [String] {
        timedHistory.compactMap { time, event in
            if case .subscription = event { return nil }
            let seconds = Double(time.nanoseconds) / 1e9
            return "t=\(seconds.formatted()):\(event)"
        }
    }

    /// The events after the subscription as a marble string, one character per tick (see ``Marble``).
    var marble: String { Marble.render(timedHistory) }

    func receive(subscription: any Subscription) {
        record(.subscription)
        lock.withLock { storedSubscription = subscription }
        if let initialDemand { subscription.request(initialDemand) }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        record(.value(input))
        return onValue(input)
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        record(.completion(completion))
    }

    func request(_ demand: Subscribers.Demand) {
        lock.withLock { storedSubscription }?.request(demand)
    }

    func cancel() {
        lock.withLock { storedSubscription }?.cancel()
    }

    private func record(_ event: Event) {
        let now = scheduler.now
        lock.withLock { events.append((now, event)) }
    }
}

extension Double {
    /// "1", "1.5": seconds without a trailing ".0".
    fileprivate func formatted() -> String {
        self == rounded() ? String(Int(self)) : String(self)
    }
}

/// Marble strings: one character per second of virtual time. A letter or digit is a value (a
/// one-character `String`), `|` finishes, `#` fails with ``MarbleError``, `-` is a quiet tick, and
/// `(ab)` puts several events in the same tick (the group takes one tick).
enum Marble {
    /// Schedules the events of `marble` into `subject` on `scheduler`, tick 0 being the current time.
    static func feed(
        _ marble: String,
        into subject: PassthroughSubject<String, MarbleError>,
        on scheduler: VirtualTimeScheduler
    ) {
        let start = scheduler.now
        var time = 0
        var inGroup = false
        for character in marble {
            let due = start.advanced(by: .seconds(time))
            switch character {
            case "(":
                inGroup = true
                continue
            case ")":
                inGroup = false
            case "-":
                break
            case "|":
                scheduler.schedule(after: due) { subject.send(completion: .finished) }
            case "#":
                scheduler.schedule(after: due) { subject.send(completion: .failure(MarbleError())) }
            default:
                scheduler.schedule(after: due) { subject.send(String(character)) }
            }
            if !inGroup { time += 1 }
        }
    }

    /// Renders recorded events as a marble string, with trailing quiet ticks dropped.
    static func render<Input, Failure>(
        _ history: [(VirtualTimeScheduler.SchedulerTimeType, TrackingSubscriber<Input, Failure>.Event)]
    ) -> String {
        var ticks: [[String]] = []
        for (time, event) in history {
            let symbol: String
            switch event {
            case .subscription: continue
            case .value(let value): symbol = "\(value)"
            case .completion(.finished): symbol = "|"
            case .completion(.failure): symbol = "#"
            }
            let index = time.nanoseconds / 1_000_000_000
            while ticks.count <= index { ticks.append([]) }
            ticks[index].append(symbol)
        }
        return ticks.map { symbols in
            switch symbols.count {
            case 0: "-"
            case 1: symbols[0]
            default: "(" + symbols.joined() + ")"
            }
        }.joined()
    }
}

/// A scheduler that runs every action on the global concurrent queue, so that actions really
/// overlap; "after" actions run as soon as possible. For race tests: wait with ``waitUntilIdle()``.
///
/// **Thread safety:** safe to call from any thread.
final class ConcurrentTestScheduler: Scheduler, @unchecked Sendable {
    // @unchecked Sendable: audited: `group` and `queue` are thread-safe Dispatch objects.
    typealias SchedulerTimeType = VirtualTimeScheduler.SchedulerTimeType
    typealias SchedulerOptions = Never

    private let group = DispatchGroup()
    private let queue = DispatchQueue.global()

    var now: SchedulerTimeType { SchedulerTimeType(nanoseconds: 0) }
    var minimumTolerance: SchedulerTimeType.Stride { .nanoseconds(0) }

    func schedule(options: Never?, _ action: @escaping () -> Void) {
        nonisolated(unsafe) let action = action
        queue.async(group: group) { action() }
    }

    func schedule(
        after date: SchedulerTimeType,
        tolerance: SchedulerTimeType.Stride,
        options: Never?,
        _ action: @escaping () -> Void
    ) {
        schedule(options: nil, action)
    }

    func schedule(
        after date: SchedulerTimeType,
        interval: SchedulerTimeType.Stride,
        tolerance: SchedulerTimeType.Stride,
        options: Never?,
        _ action: @escaping () -> Void
    ) -> any Cancellable {
        schedule(options: nil, action)
        return AnyCancellable {}
    }

    /// Waits (at most 10 s) until every scheduled action has run; returns whether they did.
    func waitUntilIdle() -> Bool {
        OffPool.checkMayBlock("DispatchGroup.wait")
        return group.wait(timeout: .now() + .seconds(10 * TestTiming.scale)) == .success
    }
}

/// A subscriber that counts deliveries and notices if two calls into it ever overlap.
///
/// **Thread safety:** safe to call from any thread.
final class OverlapCheckingSubscriber<Input, Failure: Error>: Subscriber, @unchecked Sendable {
    // @unchecked Sendable: `received`, `completions`, `overlaps` and `subscription` are guarded by `lock`.
    private let initialDemand: Subscribers.Demand
    private let inside = Atomic<Int>(0)
    private let lock = Lock()
    private var storedReceived: [Input] = []  // Guarded by lock.
    private var storedCompletions = 0  // Guarded by lock.
    private var storedOverlaps = 0  // Guarded by lock.
    private var subscription: (any Subscription)?  // Guarded by lock.

    init(initialDemand: Subscribers.Demand = .unlimited) {
        self.initialDemand = initialDemand
    }

    var received: [Input] { lock.withLock { storedReceived } }
    var completions: Int { lock.withLock { storedCompletions } }
    var overlaps: Int { lock.withLock { storedOverlaps } }

    func receive(subscription: any Subscription) {
        lock.withLock { self.subscription = subscription }
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        enter()
        lock.withLock { storedReceived.append(input) }
        leave()
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        enter()
        lock.withLock { storedCompletions += 1 }
        leave()
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
        // Widen the window in which an overlapping call would be caught.
        for _ in 0..<100 { _ = inside.load(ordering: .relaxed) }
    }

    private func leave() {
        inside.subtract(1, ordering: .releasing)
    }
}
