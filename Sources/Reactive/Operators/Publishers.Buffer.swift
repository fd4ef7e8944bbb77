extension Publisher {
    /// Buffers elements received from an upstream publisher.
    ///
    /// With ``Publishers/PrefetchStrategy/keepFull`` the upstream is asked for `size` elements at
    /// once and for one more whenever one goes downstream, so the buffer stays full ahead of
    /// demand. With ``Publishers/PrefetchStrategy/byRequest`` the upstream is asked for
    /// `.unlimited` and elements wait in the buffer until downstream asks for them. When an element
    /// arrives while the buffer holds `size`, `whenFull` decides: drop it, drop the oldest, or fail
    /// with a custom error. A completion (and the custom error) goes downstream after the elements
    /// buffered before it.
    ///
    ///     let buffered = [1, 2, 3].publisher.buffer(size: 2, prefetch: .keepFull, whenFull: .dropNewest)
    ///     let cancellable = buffered.sink { print($0) }
    ///     // Prints: 1 2 3 (one per line)
    ///
    /// - Parameters:
    ///   - size: The most elements to hold; must be greater than zero.
    ///   - prefetch: When to ask the upstream for elements.
    ///   - whenFull: What to do with an element that arrives when the buffer is full.
    /// - Returns: A publisher that buffers elements from this one.
    public func buffer(
        size: Int,
        prefetch: Publishers.PrefetchStrategy,
        whenFull: Publishers.BufferingStrategy<Failure>
    ) -> Publishers.Buffer<Self> {
        Publishers.Buffer(upstream: self, size: size, prefetch: prefetch, whenFull: whenFull)
    }
}

extension Publishers {
    /// A strategy for filling a buffer.
    ///
    /// **Thread safety:** value type; not shared.
    public enum PrefetchStrategy: Equatable, Hashable, Sendable {
        /// A strategy to fill the buffer at subscription time, and keep it full thereafter.
        case keepFull
        /// A strategy that avoids prefetching ahead of a full buffer: the upstream is asked for
        /// `.unlimited` and the buffer holds what downstream has not asked for yet.
        case byRequest
    }

    /// A strategy that handles exhaustion of a buffer's capacity.
    ///
    /// **Thread safety:** value type; the error closure runs on the thread that overflows the buffer.
    public enum BufferingStrategy<Failure: Error> {
        /// When the buffer is full, discard the newly received element.
        case dropNewest
        /// When the buffer is full, discard the oldest element in the buffer.
        case dropOldest
        /// When the buffer is full, execute the closure to provide a custom error.
        case customError(() -> Failure)
    }

    /// A publisher that buffers elements from an upstream publisher.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber, the upstream
    /// subscription and the buffered elements until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct Buffer<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The maximum number of elements to store.
        public let size: Int

        /// The strategy for initially populating the buffer.
        public let prefetch: Publishers.PrefetchStrategy

        /// The action to take when the buffer becomes full.
        public let whenFull: Publishers.BufferingStrategy<Upstream.Failure>

        /// Creates a publisher that buffers elements received from an upstream publisher.
        public init(
            upstream: Upstream,
            size: Int,
            prefetch: Publishers.PrefetchStrategy,
            whenFull: Publishers.BufferingStrategy<Upstream.Failure>
        ) {
            self.upstream = upstream
            self.size = size
            self.prefetch = prefetch
            self.whenFull = whenFull
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            guard size > 0 else { apiViolation("a buffer's size must be greater than zero, got \(size)") }
            let inner = BufferInner(downstream: subscriber, size: size, prefetch: prefetch, whenFull: whenFull)
            // Closures made here, where the types are concrete, keep the per-element path specialized.
            upstream.subscribe(
                RelaySubscriber<Output, Failure>(
                    "Buffer",
                    onSubscription: { inner.receive(subscription: $0) },
                    onValue: { inner.receive($0) },
                    onCompletion: { inner.receive(completion: $0) }
                )
            )
        }
    }
}

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

/// The subscription `buffer` hands downstream; the relay subscriber it attaches to its upstream
/// calls its `receive` methods.
///
/// **Ownership:** retained by the upstream's relay subscriber and by the downstream; releases both
/// and the buffered elements on completion or cancel.
///
/// **Thread safety:** safe to call from any thread; deliveries are serialized.
internal final class BufferInner<Downstream: Subscriber>: Subscription, CustomStringConvertible,
    CustomReflectable, CustomPlaygroundDisplayConvertible, @unchecked Sendable
{
    // @unchecked Sendable: `machine` is only touched inside `lock`; the rest is immutable.
    typealias Input = Downstream.Input
    typealias Failure = Downstream.Failure
    typealias Machine = BufferStateMachine<Downstream>

    private let lock = Lock()
    private var machine: Machine  // Guarded by lock.
    private let initialDemand: Subscribers.Demand  // Immutable.
    private let makeError: (() -> Failure)?  // Immutable.

    init(
        downstream: Downstream,
        size: Int,
        prefetch: Publishers.PrefetchStrategy,
        whenFull: Publishers.BufferingStrategy<Failure>
    ) {
        let overflow: Machine.Overflow
        switch whenFull {
        case .dropNewest:
            overflow = .dropNewest
            makeError = nil
        case .dropOldest:
            overflow = .dropOldest
            makeError = nil
        case .customError(let make):
            overflow = .fail
            makeError = make
        }
        machine = Machine(downstream: downstream, size: size, keepFull: prefetch == .keepFull, overflow: overflow)
        initialDemand = prefetch == .keepFull ? .max(size) : .unlimited
    }

    var description: String { "Buffer" }

    var customMirror: Mirror { Mirror(self, children: []) }

    var playgroundDescription: Any { description }

    func receive(subscription: any Subscription) {
        guard let downstream = lock.withLock({ machine.subscribed(subscription) }) else {
            subscription.cancel()
            return
        }
        downstream.receive(subscription: self)
        subscription.request(initialDemand)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        let (action, refill) = lock.withLock { machine.received(input) }
        perform(action)
        return refill ? .max(1) : .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        perform(lock.withLock { machine.completed(completion) })
    }

    func request(_ demand: Subscribers.Demand) {
        perform(lock.withLock { machine.requested(demand) })
    }

    func cancel() {
        perform(lock.withLock { machine.cancelled() })
    }

    private func perform(_ action: Machine.Action) {
        switch action {
        case .none:
            break
        case .cancel(let subscription):
            subscription.cancel()
        case .deliver(let downstream, let value):
            deliver(value, to: downstream, refill: nil)
        case .deliverBuffered(let downstream, let value, let refill):
            deliver(value, to: downstream, refill: refill)
        case .complete(let downstream, let completion):
            downstream.receive(completion: completion)
        case .makeCustomError(let upstream):
            upstream.cancel()
            guard let makeError else { internalInconsistency("overflow error without a closure") }
            let error = makeError()
            perform(lock.withLock { machine.failedWithCustomError(error) })
        }
    }

    /// The delivery loop: one thread at a time runs it, so downstream calls never overlap.
    private func deliver(_ first: Input, to downstream: Downstream, refill: (any Subscription)?) {
        var additional = downstream.receive(first)
        refill?.request(.max(1))
        while true {
            switch lock.withLock({ machine.delivered(additional) }) {
            case .deliver(let value, let refill):
                additional = downstream.receive(value)
                refill?.request(.max(1))
            case .complete(let completion):
                downstream.receive(completion: completion)
                return
            case .stop:
                return
            }
        }
    }
}
