/// The state of one `buffer` subscription: the buffered elements, a completion waiting behind
/// them, the downstream demand and who is delivering.
///
/// **Ownership:** owned by ``BufferInner``; holds the downstream, the upstream subscription and the
/// elements until it becomes terminal.
///
/// **Thread safety:** value type; every event runs under the inner's lock.
internal struct BufferStateMachine<Downstream: Subscriber> {
    typealias Output = Downstream.Input
    typealias Failure = Downstream.Failure

    enum State {
        /// Waiting for the upstream subscription. Next: `.idle`, `.terminal`.
        case awaitingSubscription
        /// Nobody is delivering: the buffer is empty or there is no demand. Next: `.delivering`,
        /// `.terminal`.
        case idle
        /// One thread is inside the downstream's `receive(_:)`; elements and demand arriving
        /// meanwhile are picked up by its loop. Next: `.idle`, `.terminal`.
        case delivering
        /// Completed or cancelled; everything is released. Next: none.
        case terminal
    }

    /// What to do with an element that finds the buffer full.
    enum Overflow {
        case dropNewest
        case dropOldest
        case fail
    }

    enum Action {
        case none
        case cancel(any Subscription)
        /// Deliver, then loop; afterwards the upstream gets `refill` through `receive(_:)`'s result.
        case deliver(Downstream, Output)
        /// Deliver a buffered element, ask the upstream for one more if given, then loop.
        case deliverBuffered(Downstream, Output, refill: (any Subscription)?)
        case complete(Downstream, Subscribers.Completion<Failure>)
        /// The buffer overflowed under `.customError`: cancel the upstream, make the error, and
        /// feed it back as ``BufferStateMachine/failedWithCustomError(_:)``.
        case makeCustomError(cancel: any Subscription)
    }

    /// How the stream ends, behind the buffered elements.
    enum Ending {
        /// Still open: elements are accepted. Next: `.makingError`, `.ready`.
        case open
        /// The buffer overflowed under `.customError`; the error is being made outside the lock.
        /// Next: `.ready`.
        case makingError
        /// This completion goes out once the buffer is empty. Final.
        case ready(Subscribers.Completion<Failure>)
    }

    enum DeliveryAction {
        case deliver(Output, refill: (any Subscription)?)
        case complete(Subscribers.Completion<Failure>)
        case stop
    }

    private var state: State = .awaitingSubscription
    private var downstream: Downstream?
    private var upstream: (any Subscription)?
    private var buffer = RingQueue<Output>()
    private var ending: Ending = .open
    private var demand = Subscribers.Demand.none
    private let size: Int
    private let keepFull: Bool
    private let overflow: Overflow

    init(downstream: Downstream, size: Int, keepFull: Bool, overflow: Overflow) {
        self.downstream = downstream
        self.size = size
        self.keepFull = keepFull
        self.overflow = overflow
    }

    /// Returns the downstream to hand the subscription to, or `nil` when it is not wanted.
    mutating func subscribed(_ subscription: any Subscription) -> Downstream? {
        guard case .awaitingSubscription = state else { return nil }
        state = .idle
        upstream = subscription
        return downstream
    }

    /// An element arrived; `refill` says whether `receive(_:)` should ask for one more.
    mutating func received(_ value: Output) -> (action: Action, refill: Bool) {
        switch state {
        case .awaitingSubscription, .terminal:
            return (.none, false)
        case .idle, .delivering:
            break
        }
        guard case .open = ending else { return (.none, false) }
        if case .idle = state, demand > 0, buffer.isEmpty, let downstream {
            demand -= 1
            state = .delivering
            return (.deliver(downstream, value), keepFull)
        }
        guard buffer.count >= size else {
            buffer.append(value)
            return (.none, false)
        }
        switch overflow {
        case .dropNewest:
            return (.none, false)
        case .dropOldest:
            _ = buffer.popFirst()
            buffer.append(value)
            return (.none, false)
        case .fail:
            guard let upstream else { return (.none, false) }
            self.upstream = nil
            ending = .makingError
            return (.makeCustomError(cancel: upstream), false)
        }
    }

    mutating func failedWithCustomError(_ error: Failure) -> Action {
        guard case .makingError = ending else { return .none }
        return end(with: .failure(error))
    }

    mutating func completed(_ completion: Subscribers.Completion<Failure>) -> Action {
        guard case .open = ending else { return .none }
        upstream = nil
        return end(with: completion)
    }

    private mutating func end(with completion: Subscribers.Completion<Failure>) -> Action {
        switch state {
        case .awaitingSubscription, .terminal:
            return .none
        case .idle, .delivering:
            break
        }
        ending = .ready(completion)
        guard case .idle = state, buffer.isEmpty, let downstream else { return .none }
        enterTerminal()
        return .complete(downstream, completion)
    }

    mutating func requested(_ newDemand: Subscribers.Demand) -> Action {
        guard newDemand > 0 else { apiViolation("demand must be greater than zero, got \(newDemand)") }
        guard case .idle = state else {
            if case .delivering = state { demand += newDemand }
            return .none
        }
        demand += newDemand
        guard let downstream, let value = buffer.popFirst() else { return .none }
        demand -= 1
        state = .delivering
        return .deliverBuffered(downstream, value, refill: keepFull ? upstream : nil)
    }

    mutating func cancelled() -> Action {
        if case .terminal = state { return .none }
        let upstream = upstream
        enterTerminal()
        return upstream.map { .cancel($0) } ?? .none
    }

    mutating func delivered(_ additional: Subscribers.Demand) -> DeliveryAction {
        guard case .delivering = state else { return .stop }
        demand += additional
        if demand > 0, let value = buffer.popFirst() {
            demand -= 1
            return .deliver(value, refill: keepFull ? upstream : nil)
        }
        if buffer.isEmpty, case .ready(let completion) = ending {
            enterTerminal()
            return .complete(completion)
        }
        state = .idle
        return .stop
    }

    private mutating func enterTerminal() {
        state = .terminal
        downstream = nil
        upstream = nil
        buffer.removeAll()
    }
}
