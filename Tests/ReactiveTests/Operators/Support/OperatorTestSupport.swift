import Dispatch
import Foundation
import Reactive
import Synchronization
import TestSupport
import Testing

/// The error the operator tests send and throw.
struct OperatorError: Error, Equatable, CustomStringConvertible {
    var code = 1
    var description: String { "OperatorError(\(code))" }
}

/// A publisher the test drives by hand: each subscriber gets a ``TrackingSubscription`` that records
/// the demand and cancel it receives; ``send(_:)`` and ``send(completion:)`` reach the latest subscriber.
///
/// **Thread safety:** safe to call from any thread; a test sends from one thread at a time.
final class DrivenPublisher<Output, Failure: Error>: Publisher, @unchecked Sendable {
    // @unchecked Sendable: `subscriber` and `trackers` are guarded by `lock`.
    private let lock = NSLock()
    private var subscriber: AnySubscriber<Output, Failure>?  // Guarded by lock.
    private var trackers: [TrackingSubscription] = []  // Guarded by lock.

    /// The subscription handed to the latest subscriber.
    var subscription: TrackingSubscription { lock.withLock { trackers.last! } }

    /// How many times something subscribed.
    var subscribeCount: Int { lock.withLock { trackers.count } }

    /// Whether a subscriber is still attached (not completed, not cancelled).
    var hasSubscriber: Bool { lock.withLock { subscriber != nil } }

    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        let tracker = TrackingSubscription(onCancel: { [weak self] in self?.detach() })
        lock.withLock {
            self.subscriber = AnySubscriber(subscriber)
            trackers.append(tracker)
        }
        subscriber.receive(subscription: tracker)
    }

    /// Sends a value to the attached subscriber; returns the demand it answered with.
    @discardableResult
    func send(_ value: Output) -> Subscribers.Demand {
        lock.withLock { subscriber }?.receive(value) ?? .none
    }

    /// Completes the attached subscriber and lets it go.
    func send(completion: Subscribers.Completion<Failure>) {
        let subscriber = lock.withLock { () -> AnySubscriber<Output, Failure>? in
            defer { self.subscriber = nil }
            return self.subscriber
        }
        subscriber?.receive(completion: completion)
    }

    private func detach() {
        lock.withLock { subscriber = nil }
    }
}

/// How a lifecycle test ends the stream.
enum StreamEnding: CaseIterable, Sendable {
    case finish
    case fail
    case cancel
}

/// Subscribes a tracking subscriber to `make(upstream)`, sends one value, ends the stream, and
/// reports whether the operator let go of the subscriber and of its own subscription object.
func releases<P: Publisher>(
    _ ending: StreamEnding,
    _ make: (DrivenPublisher<Int, OperatorError>) -> P
) -> (subscriberReleased: Bool, subscriptionReleased: Bool) {
    let upstream = DrivenPublisher<Int, OperatorError>()
    weak var weakSubscriber: TrackingSubscriber<P.Output, P.Failure>?
    weak var weakSubscription: AnyObject?
    do {
        let subscriber = TrackingSubscriber<P.Output, P.Failure>()
        weakSubscriber = subscriber
        make(upstream).subscribe(subscriber)
        if let subscription = subscriber.subscription, !(subscription is TrackingSubscription) {
            weakSubscription = subscription as AnyObject
        }
        upstream.send(1)
        switch ending {
        case .finish: upstream.send(completion: .finished)
        case .fail: upstream.send(completion: .failure(OperatorError()))
        case .cancel: subscriber.cancel()
        }
    }
    return (weakSubscriber == nil, weakSubscription == nil)
}

/// A subscriber for race tests: counts what arrives and notices overlapping calls or values after
/// the completion.
///
/// **Thread safety:** safe to call from any thread.
final class RaceSubscriber<Input, Failure: Error>: Subscriber, @unchecked Sendable {
    // @unchecked Sendable: the counters and `subscription` are guarded by `lock`; `inside` is atomic.
    struct Report: Equatable, CustomStringConvertible {
        var values = 0
        var completions = 0
        var overlaps = 0
        var valuesAfterCompletion = 0
        var description: String {
            "values \(values), completions \(completions), overlaps \(overlaps), late \(valuesAfterCompletion)"
        }
    }

    private let inside = Atomic<Int>(0)
    private let lock = NSLock()
    private var storedReport = Report()  // Guarded by lock.
    private var subscription: (any Subscription)?  // Guarded by lock.
    private let initialDemand: Subscribers.Demand

    init(initialDemand: Subscribers.Demand) {
        self.initialDemand = initialDemand
    }

    var report: Report { lock.withLock { storedReport } }

    func receive(subscription: any Subscription) {
        lock.withLock { self.subscription = subscription }
        subscription.request(initialDemand)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        enter()
        lock.withLock {
            storedReport.values += 1
            if storedReport.completions > 0 { storedReport.valuesAfterCompletion += 1 }
        }
        leave()
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        enter()
        lock.withLock { storedReport.completions += 1 }
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
            lock.withLock { storedReport.overlaps += 1 }
        }
    }

    private func leave() {
        inside.subtract(1, ordering: .releasing)
    }
}

/// Subscribes a ``RaceSubscriber`` asking for one value, then lets three threads request one value
/// at a time while a fourth requests a little and cancels. Returns the report and the total demand.
func raceRequestsAgainstCancel<P: Publisher>(_ publisher: P) -> (
    report: RaceSubscriber<P.Output, P.Failure>.Report, requested: Int
) {
    let subscriber = RaceSubscriber<P.Output, P.Failure>(initialDemand: .max(1))
    publisher.subscribe(subscriber)
    let perThread = 200
    DispatchQueue.concurrentPerform(iterations: 4) { index in
        if index == 3 {
            for _ in 0..<20 { subscriber.request(.max(1)) }
            subscriber.cancel()
        } else {
            for _ in 0..<perThread { subscriber.request(.max(1)) }
        }
    }
    return (subscriber.report, 1 + 3 * perThread + 20)
}

/// Sends from two threads into a subject feeding `make(subject)`, while two others request and
/// cancel. Returns the report and the total demand.
func raceSendsAgainstRequests<P: Publisher>(
    _ make: (PassthroughSubject<Int, Never>) -> P
) -> (report: RaceSubscriber<P.Output, P.Failure>.Report, requested: Int) {
    let subject = PassthroughSubject<Int, Never>()
    let subscriber = RaceSubscriber<P.Output, P.Failure>(initialDemand: .max(1))
    make(subject).subscribe(subscriber)
    DispatchQueue.concurrentPerform(iterations: 4) { index in
        switch index {
        case 0, 1:
            for value in 0..<500 { subject.send(value) }
            if index == 0 { subject.send(completion: .finished) }
        case 2:
            for _ in 0..<100 { subscriber.request(.max(1)) }
        default:
            for _ in 0..<20 { subscriber.request(.max(1)) }
            subscriber.cancel()
        }
    }
    return (subscriber.report, 1 + 100 + 20)
}

/// Collects what `print` writes, one `write` call per element, as Combine's stream sees them.
final class RecordingStream: TextOutputStream, @unchecked Sendable {
    // @unchecked Sendable: `writes` is guarded by `lock`.
    private let lock = NSLock()
    private var writes: [String] = []  // Guarded by lock.

    func write(_ string: String) {
        lock.withLock { writes.append(string) }
    }

    /// Everything written, joined.
    var text: String { lock.withLock { writes.joined() } }

    /// Every `write` call's string, in order.
    var calls: [String] { lock.withLock { writes } }
}

/// A `TextOutputStream` value that forwards to a shared ``RecordingStream``, the way a user's
/// struct stream would.
struct ForwardingStream: TextOutputStream {
    let target: RecordingStream

    mutating func write(_ string: String) {
        target.write(string)
    }
}
