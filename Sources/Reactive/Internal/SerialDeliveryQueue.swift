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
    private var events = RingQueue<Event>()

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
