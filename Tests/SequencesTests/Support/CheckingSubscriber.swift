import Reactive
import Sequences
import Synchronization

/// A subscriber for race tests: counts what it receives and notices any two calls that overlap.
///
/// **Ownership:** holds its subscription until completion; the test drops it.
///
/// **Thread safety:** safe to call from any thread.
final class CheckingSubscriber: Subscriber, @unchecked Sendable {
    // @unchecked Sendable: `indices`, `completions` and `storedSubscription` are only touched inside `lock`.
    typealias Input = Term
    typealias Failure = Never

    private let lock = Lock()
    private var indices: [Int] = []  // Guarded by lock.
    private var completions = 0  // Guarded by lock.
    private var storedSubscription: (any Subscription)?  // Guarded by lock.
    private let callsInFlight = Atomic<Int>(0)
    private let overlaps = Atomic<Int>(0)

    var receivedIndices: [Int] { lock.withLock { indices } }
    var completionCount: Int { lock.withLock { completions } }
    var overlapCount: Int { overlaps.load(ordering: .acquiring) }
    var subscription: (any Subscription)? { lock.withLock { storedSubscription } }

    /// Requests through the stored subscription.
    func request(_ demand: Subscribers.Demand) {
        subscription?.request(demand)
    }

    /// Cancels the stored subscription (and keeps it, so that later requests can show they do nothing).
    func cancel() {
        subscription?.cancel()
    }

    func receive(subscription: any Subscription) {
        enter()
        defer { leave() }
        lock.withLock { storedSubscription = subscription }
    }

    func receive(_ input: Term) -> Subscribers.Demand {
        enter()
        defer { leave() }
        lock.withLock { indices.append(input.index) }
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {
        enter()
        defer { leave() }
        lock.withLock { completions += 1 }
    }

    private func enter() {
        if callsInFlight.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue != 1 {
            overlaps.wrappingAdd(1, ordering: .relaxed)
        }
    }

    private func leave() {
        callsInFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing)
    }
}

/// A subscriber that keeps nothing but what it is told to keep: it does not retain its subscription,
/// so a test can check that the subscription lets go of it.
final class ForgetfulSubscriber: Subscriber, @unchecked Sendable {
    // @unchecked Sendable: audited: no lock needed because `received` is only written by the publisher's
    // calls, which never overlap, and read by the test after they returned.
    typealias Input = Term
    typealias Failure = Never

    private let initialDemand: Subscribers.Demand?
    private(set) var received = 0

    init(initialDemand: Subscribers.Demand?) {
        self.initialDemand = initialDemand
    }

    func receive(subscription: any Subscription) {
        if let initialDemand { subscription.request(initialDemand) }
    }

    func receive(_ input: Term) -> Subscribers.Demand {
        received += 1
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}
}
