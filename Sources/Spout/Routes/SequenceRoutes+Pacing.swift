import Dispatch
import Reactive
import Sequences

extension SequencePlan {
    /// The queue paced streams wait on; elements then hop to their connection's loop.
    private static let pacingQueue = DispatchQueue(label: "spout.pacing")

    /// `publisher` (this plan's sequence) paced by `interval`, or `nil` when none was asked for (the elements then flow
    /// as fast as the client reads, through the unerased publisher). See ``PacedPublisher``.
    func paced(_ publisher: SequencePublisher) -> AnyPublisher<Term, Never>? {
        guard let intervalMilliseconds else { return nil }
        return PacedPublisher(
            upstream: publisher,
            interval: .milliseconds(intervalMilliseconds),
            scheduler: Self.pacingQueue
        )
        .eraseToAnyPublisher()
    }
}

/// `upstream` with at least `interval` between two elements, the first at once.
///
/// Each element is requested from upstream only when the subscriber has demand and the interval since the
/// previous element has passed, so a stalled reader pauses the producer and nothing queues up meanwhile; the
/// element it then asks for goes out at once (its time has come). The first element, after a resume too,
/// goes out as soon as it is asked for: an `EventSource` client expects something as soon as it connects.
///
/// (`flatMap(maxPublishers: .max(1))` over delayed `Just`s, which this replaces, asked upstream for the next
/// element whenever the previous child finished, demand or not, and queued one element per interval for a
/// reader that had stopped.)
///
///     PacedPublisher(upstream: [1, 2, 3].publisher, interval: .seconds(1), scheduler: DispatchQueue.main)
///         .sink { print($0) }
///     // Prints: 1 at once, then 2 and 3 a second apart
///
/// **Thread safety:** value type; its subscriptions are safe to call from any thread.
struct PacedPublisher<Upstream: Publisher, Context: Scheduler>: Publisher {
    typealias Output = Upstream.Output
    typealias Failure = Upstream.Failure

    let upstream: Upstream
    let interval: Context.SchedulerTimeType.Stride
    let scheduler: Context

    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        upstream.subscribe(Inner(downstream: subscriber, interval: interval, scheduler: scheduler))
    }

    /// The subscriber to upstream and the subscription of downstream, in one.
    ///
    /// **Ownership:** retained by upstream's subscription and by downstream until completion or cancel; the
    /// scheduled wake-ups retain it until they run.
    ///
    /// **Thread safety:** safe to call from any thread; `machine` is guarded by `lock`, and no call to
    /// upstream, downstream or the scheduler is made while it is held.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, @unchecked Sendable
    where Downstream.Input == Output, Downstream.Failure == Failure {
        // @unchecked Sendable: `machine` is only touched inside `lock`; the other stored properties are immutable.
        typealias Input = Output
        typealias Time = Context.SchedulerTimeType

        private let downstream: Downstream  // Immutable.
        private let interval: Context.SchedulerTimeType.Stride  // Immutable.
        private let scheduler: Context  // Immutable.
        private let lock = Lock()
        private var machine = PacingStateMachine<Time>()  // Guarded by lock.

        init(downstream: Downstream, interval: Context.SchedulerTimeType.Stride, scheduler: Context) {
            self.downstream = downstream
            self.interval = interval
            self.scheduler = scheduler
        }

        var description: String { "Paced" }

        func receive(subscription: any Subscription) {
            guard lock.withLock({ machine.subscribed(subscription) }) else {
                subscription.cancel()
                return
            }
            downstream.receive(subscription: self)
        }

        func request(_ demand: Subscribers.Demand) {
            let now = scheduler.now
            perform(lock.withLock { machine.demanded(demand, now: now) })
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            let now = scheduler.now
            guard lock.withLock({ machine.received(dueNext: now.advanced(by: interval)) }) else { return .none }
            let additional = downstream.receive(input)
            let after = scheduler.now
            perform(lock.withLock { machine.delivered(additional, now: after) })
            return .none
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            guard lock.withLock({ machine.ended() }) != nil else { return }
            downstream.receive(completion: completion)
        }

        func cancel() {
            lock.withLock { machine.ended() }?.cancel()
        }

        private func perform(_ action: PacingStateMachine<Time>.Action) {
            switch action {
            case .none:
                break
            case .requestOne(let subscription):
                subscription.request(.max(1))
            case .wake(let time, let generation):
                scheduler.schedule(after: time) { [self] in
                    let now = scheduler.now
                    perform(lock.withLock { machine.woke(generation, now: now) })
                }
            }
        }
    }
}

/// The state of one paced subscription: demand, and whether an element is asked for, waited for, or neither.
///
/// **Thread safety:** value type; guarded by its owner's lock.
struct PacingStateMachine<Time: Strideable> {
    private enum State {
        /// Before upstream's subscription. Next: `.active`, `.done`.
        case waiting
        /// Subscribed. Next: `.done`.
        case active(Active)
        /// Completed or cancelled. Final.
        case done
    }

    private struct Active {
        let subscription: any Subscription
        var demand: Subscribers.Demand = .none
        /// When the next element may be asked for; `nil` for the first, which may be asked for at once.
        var due: Time?
        var phase: Phase = .idle
    }

    private enum Phase {
        /// Nothing asked for, no wake-up pending.
        case idle
        /// A wake-up is scheduled for `due`; only the one with this generation counts.
        case sleeping(generation: Int)
        /// One element was requested from upstream and has not arrived.
        case requested
    }

    enum Action {
        case none
        case requestOne(any Subscription)
        case wake(at: Time, generation: Int)
    }

    private var state = State.waiting
    private var generation = 0

    init() {}

    /// Upstream's subscription arrived; false if it is one too many (cancel it).
    mutating func subscribed(_ subscription: any Subscription) -> Bool {
        guard case .waiting = state else { return false }
        state = .active(Active(subscription: subscription))
        return true
    }

    mutating func demanded(_ demand: Subscribers.Demand, now: Time) -> Action {
        guard demand > 0 else { apiViolation("demand must be greater than zero, got \(demand)") }
        guard case .active(var active) = state else { return .none }
        active.demand += demand
        return next(&active, now: now)
    }

    /// An element arrived; true if it should be delivered (it was asked for). The next may come at `dueNext`.
    mutating func received(dueNext: Time) -> Bool {
        guard case .active(var active) = state, case .requested = active.phase, active.demand > 0 else { return false }
        active.demand -= 1
        active.due = dueNext
        active.phase = .idle
        state = .active(active)
        return true
    }

    /// Downstream's `receive(_:)` returned `additional`.
    mutating func delivered(_ additional: Subscribers.Demand, now: Time) -> Action {
        guard case .active(var active) = state else { return .none }
        active.demand += additional
        return next(&active, now: now)
    }

    /// A wake-up ran.
    mutating func woke(_ generation: Int, now: Time) -> Action {
        guard case .active(var active) = state, case .sleeping(generation) = active.phase else { return .none }
        active.phase = .idle
        return next(&active, now: now)
    }

    /// Completion or cancel; the subscription to cancel, if it was active (`nil` when already done).
    mutating func ended() -> (any Subscription)? {
        defer { state = .done }
        switch state {
        case .active(let active): return active.subscription
        case .waiting, .done: return nil
        }
    }

    /// From `.idle`: ask for an element if there is demand and its time has come, else sleep until it has.
    private mutating func next(_ active: inout Active, now: Time) -> Action {
        defer { state = .active(active) }
        guard case .idle = active.phase, active.demand > 0 else { return .none }
        if let due = active.due, due > now {
            generation += 1
            active.phase = .sleeping(generation: generation)
            return .wake(at: due, generation: generation)
        }
        active.phase = .requested
        return .requestOne(active.subscription)
    }

    private func apiViolation(_ message: String) -> Never {
        preconditionFailure("API violation: \(message)")
    }
}
