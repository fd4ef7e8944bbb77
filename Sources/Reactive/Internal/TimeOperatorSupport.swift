// Shared pieces of the scheduler-driven operators (receive(on:), delay, debounce, throttle, timeout,
// collect(byTime:), retry(_:withBackoff:)). Each operator keeps its own state machine; these are
// the parts of it that would otherwise be written seven times.

/// A first-in first-out queue on a ring buffer that grows by doubling and never shrinks.
///
/// **Ownership:** value type, stored inside a state machine.
///
/// **Thread safety:** value type; not shared. Its owner guards it with its lock.
///
/// - Complexity: `append` and `popFirst` are amortized O(1); no allocation once the buffer has grown.
internal struct TimeEventQueue<Element> {
    private var storage: ContiguousArray<Element?> = []
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        var index = head + count
        if index >= storage.count { index -= storage.count }
        storage[index] = element
        count += 1
    }

    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head].take()
        head += 1
        if head == storage.count { head = 0 }
        count -= 1
        return element
    }

    mutating func removeAll() {
        storage = []
        head = 0
        count = 0
    }

    private mutating func grow() {
        var bigger = ContiguousArray<Element?>(repeating: nil, count: Swift.max(4, storage.count * 2))
        for offset in 0..<count {
            var index = head + offset
            if index >= storage.count { index -= storage.count }
            bigger[offset] = storage[index].take()
        }
        storage = bigger
        head = 0
    }
}

/// Serializes deliveries that are triggered from scheduled actions, so that a downstream subscriber
/// never receives two calls at once even on a concurrent scheduler, and receives them in the order
/// they were produced.
///
/// Every produced event is ``enqueue(_:)``d under the owner's lock, and exactly one scheduled action
/// (or an inline caller) later reports a *credit* for it. A credit that finds nobody delivering makes
/// its caller the deliverer; a credit that arrives during a delivery is left for the deliverer's loop.
/// On a serial scheduler this delivers event *k* in action *k*, exactly as Combine does.
///
/// **Ownership:** value type, stored inside the owner's state machine.
///
/// **Thread safety:** value type; not shared. Its owner guards it with its lock.
internal struct SerialDeliveryQueue<Event> {
    /// Whether some caller is delivering.
    private enum State {
        /// Nobody delivers; every enqueued event still waits for its credit. Next: `.delivering`.
        case idle
        /// One caller delivers; `credits` counts credits that arrived meanwhile. Next: `.idle`.
        case delivering(credits: Int)
    }

    private var state = State.idle
    private var events = TimeEventQueue<Event>()

    /// Whether a caller is delivering right now.
    var isDelivering: Bool {
        if case .delivering = state { return true }
        return false
    }

    /// The number of events waiting to be delivered.
    var count: Int { events.count }

    /// Records an event; the caller must arrange exactly one credit for it.
    mutating func enqueue(_ event: Event) {
        events.append(event)
    }

    /// A credit arrived: returns the event the caller must deliver now, or `nil` if another caller
    /// is delivering (it will pick the event up) or there is nothing left (the queue was cleared).
    mutating func creditArrived() -> Event? {
        switch state {
        case .idle:
            guard let event = events.popFirst() else { return nil }
            state = .delivering(credits: 0)
            return event
        case .delivering(let credits):
            state = .delivering(credits: credits + 1)
            return nil
        }
    }

    /// The deliverer finished one delivery: returns the next event it must deliver, or `nil` when
    /// it is done and the queue is idle again.
    mutating func deliveryFinished() -> Event? {
        guard case .delivering(let credits) = state else {
            internalInconsistency("deliveryFinished() while idle")
        }
        if credits > 0, let event = events.popFirst() {
            state = .delivering(credits: credits - 1)
            return event
        }
        state = .idle
        return nil
    }

    /// Drops every waiting event (on cancel or terminal completion); late credits then find nothing.
    mutating func removeAll() {
        events.removeAll()
    }
}

/// Bookkeeping for one cancellable timer that may be re-armed: which generation is current, and
/// its `Cancellable` once the scheduler has returned it.
///
/// Timers are created with `schedule(after:interval:…)` so that they can be cancelled (releasing
/// the closure) when they are re-armed or the operator is cancelled. Scheduling happens outside the
/// owner's lock, so a timer may fire, or be superseded, before its cancellable is stored; the
/// generation tells a stale fire from a current one, and ``scheduled(_:generation:)`` hands back a
/// cancellable that arrived too late, for the owner to cancel.
///
/// **Ownership:** value type, stored inside the owner's state machine.
///
/// **Thread safety:** value type; not shared. Its owner guards it with its lock.
internal struct TimerSlot {
    private enum State {
        /// No timer is wanted. Next: `.scheduling`.
        case disarmed
        /// A timer of this generation is being scheduled; its cancellable has not arrived. Next: any.
        case scheduling(UInt64)
        /// The timer of this generation is scheduled and can be cancelled. Next: any.
        case armed(UInt64, any Cancellable)
    }

    private var state = State.disarmed
    private var nextGeneration: UInt64 = 0

    /// Whether a timer is wanted (scheduling or armed).
    var isArmed: Bool {
        if case .disarmed = state { return false }
        return true
    }

    /// Starts a new generation; returns it and the previous timer's cancellable, to be cancelled.
    mutating func rearm() -> (generation: UInt64, previous: (any Cancellable)?) {
        let previous = disarm()
        let generation = nextGeneration
        nextGeneration &+= 1
        state = .scheduling(generation)
        return (generation, previous)
    }

    /// The scheduler returned the cancellable of `generation`. Returns it back if it is no longer
    /// wanted (superseded, fired or disarmed meanwhile): the owner must cancel it.
    mutating func scheduled(_ cancellable: any Cancellable, generation: UInt64) -> (any Cancellable)? {
        guard case .scheduling(let current) = state, current == generation else { return cancellable }
        state = .armed(generation, cancellable)
        return nil
    }

    /// The one-shot timer of `generation` fired. Returns whether it was current (then it is
    /// disarmed) and its cancellable, which the owner must cancel so that it does not repeat.
    mutating func firedOnce(generation: UInt64) -> (isCurrent: Bool, cancellable: (any Cancellable)?) {
        switch state {
        case .scheduling(let current) where current == generation:
            state = .disarmed
            return (true, nil)
        case .armed(let current, let cancellable) where current == generation:
            state = .disarmed
            return (true, cancellable)
        default:
            return (false, nil)
        }
    }

    /// Whether a repeating timer's fire of `generation` is current; it stays armed.
    func isCurrent(generation: UInt64) -> Bool {
        switch state {
        case .scheduling(let current), .armed(let current, _): current == generation
        case .disarmed: false
        }
    }

    /// Disarms; returns the armed timer's cancellable, to be cancelled.
    mutating func disarm() -> (any Cancellable)? {
        defer { state = .disarmed }
        if case .armed(_, let cancellable) = state { return cancellable }
        return nil
    }
}
