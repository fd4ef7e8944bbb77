import Reactive
import Synchronization

/// A test subscriber that counts deliveries and notices if two calls into it ever overlap.
///
/// **Thread safety:** safe to call from any thread.
final class SerialCheckingSubscriber: Subscriber, @unchecked Sendable {
    // @unchecked Sendable: `report`, `received` and `subscription` are guarded by `lock`; `inside` is atomic.
    struct Report: Equatable {
        var values: Int
        var completions: Int
        var overlaps: Int
    }

    typealias Input = Int
    typealias Failure = Never

    private let initialDemand: Subscribers.Demand
    private let inside = Atomic<Int>(0)
    private let lock = Lock()
    private var storedReport = Report(values: 0, completions: 0, overlaps: 0)  // Guarded by lock.
    private var storedReceived: [Int] = []  // Guarded by lock.
    private var subscription: (any Subscription)?  // Guarded by lock.

    init(initialDemand: Subscribers.Demand) {
        self.initialDemand = initialDemand
    }

    var report: Report { lock.withLock { storedReport } }
    var received: [Int] { lock.withLock { storedReceived } }

    func receive(subscription: any Subscription) {
        lock.withLock { self.subscription = subscription }
        subscription.request(initialDemand)
    }

    func receive(_ input: Int) -> Subscribers.Demand {
        enter()
        lock.withLock {
            storedReport.values += 1
            storedReceived.append(input)
        }
        leave()
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {
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
