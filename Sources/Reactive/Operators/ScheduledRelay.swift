/// The subscription of `receive(on:)` and `delay(for:…)`: relays every upstream event to the
/// downstream subscriber from an action on the scheduler (at once, or after a fixed interval),
/// serialized and in order; requests and cancellation go straight upstream.
///
/// **Ownership:** retained by the upstream publisher (as its subscriber), by the downstream subscriber
/// (as its subscription) and by each scheduled action until it has run; it drops both neighbours on
/// completion or cancel, which breaks the cycle.
///
/// **Thread safety:** safe to call from any thread.
internal final class ScheduledRelay<Downstream: Subscriber, Context: Scheduler>: Subscriber, Subscription,
    ScheduledDeliverer, CustomStringConvertible, CustomReflectable, @unchecked Sendable
{
    // @unchecked Sendable: `core` is only touched inside `lock`; everything else is immutable.
    typealias Input = Downstream.Input
    typealias Failure = Downstream.Failure

    /// When the relayed events are delivered.
    enum Timing {
        /// At the scheduler's next opportunity (`receive(on:)`).
        case immediately
        /// After the interval, measured from the moment upstream sent the event (`delay`).
        case after(Context.SchedulerTimeType.Stride, tolerance: Context.SchedulerTimeType.Stride)
    }

    private let name: String
    private let scheduler: Context
    private let timing: Timing
    private let options: Context.SchedulerOptions?
    private let lock = Lock()
    private var core: ScheduledDelivery<Downstream>  // Guarded by lock.

    init(name: String, downstream: Downstream, scheduler: Context, timing: Timing, options: Context.SchedulerOptions?) {
        self.name = name
        self.scheduler = scheduler
        self.timing = timing
        self.options = options
        core = ScheduledDelivery(downstream: downstream, demandMode: .forwarded)
    }

    var description: String { name }

    var customMirror: Mirror { Mirror(self, children: []) }

    func withDelivery<Result>(_ body: (inout ScheduledDelivery<Downstream>) -> Result) -> Result {
        lock.withLock { body(&core) }
    }

    func receive(subscription: any Subscription) {
        acceptSubscription(subscription)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        let accepted = lock.withLock { () -> Bool in
            guard core.isActive else { return false }
            core.enqueue(input)
            return true
        }
        if accepted { scheduleDelivery() }
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        if lock.withLock({ core.enqueueCompletion(completion) }) {
            scheduleDelivery()
        }
    }

    func request(_ demand: Subscribers.Demand) {
        demandArrived(demand)
    }

    func cancel() {
        lock.withLock { core.cancelled() }?.cancel()
    }

    /// One scheduled action per relayed event: each is that event's credit.
    private func scheduleDelivery() {
        switch timing {
        case .immediately:
            scheduler.schedule(options: options) { self.creditArrived() }
        case .after(let interval, let tolerance):
            let due = scheduler.now.advanced(by: interval)
            scheduler.schedule(after: due, tolerance: tolerance, options: options) { self.creditArrived() }
        }
    }
}
