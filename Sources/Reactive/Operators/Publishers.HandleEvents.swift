extension Publisher {
    /// Performs the specified closures when publisher events occur.
    ///
    /// Each closure runs before the event is passed on; `receiveCancel` and `receiveRequest` run
    /// only while the subscription is live.
    ///
    ///     let cancellable = [1, 2].publisher
    ///         .handleEvents(receiveOutput: { print("saw \($0)") })
    ///         .sink { _ in }
    ///     // Prints: saw 1 saw 2 (one per line)
    ///
    /// - Parameters:
    ///   - receiveSubscription: Runs when the publisher receives the subscription from upstream.
    ///   - receiveOutput: Runs when the publisher receives a value from upstream.
    ///   - receiveCompletion: Runs when upstream completes.
    ///   - receiveCancel: Runs when downstream cancels.
    ///   - receiveRequest: Runs when downstream requests more elements: with `request(_:)`, and with
    ///     the demand it returns from `receive(_:)` when that is more than zero.
    /// - Returns: A publisher that performs the specified closures when publisher events occur.
    public func handleEvents(
        receiveSubscription: ((any Subscription) -> Void)? = nil,
        receiveOutput: ((Output) -> Void)? = nil,
        receiveCompletion: ((Subscribers.Completion<Failure>) -> Void)? = nil,
        receiveCancel: (() -> Void)? = nil,
        receiveRequest: ((Subscribers.Demand) -> Void)? = nil
    ) -> Publishers.HandleEvents<Self> {
        Publishers.HandleEvents(
            upstream: self,
            receiveSubscription: receiveSubscription,
            receiveOutput: receiveOutput,
            receiveCompletion: receiveCompletion,
            receiveCancel: receiveCancel,
            receiveRequest: receiveRequest
        )
    }
}

extension Publishers {
    /// A publisher that performs the specified closures when publisher events occur.
    ///
    /// **Ownership:** a value; its subscription retains the closures until the stream ends.
    ///
    /// **Thread safety:** value type; each closure runs on the thread of its event.
    public struct HandleEvents<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that runs when the publisher receives the subscription from upstream.
        public var receiveSubscription: ((any Subscription) -> Void)?

        /// A closure that runs when the publisher receives a value from upstream.
        public var receiveOutput: ((Upstream.Output) -> Void)?

        /// A closure that runs when upstream completes.
        public var receiveCompletion: ((Subscribers.Completion<Upstream.Failure>) -> Void)?

        /// A closure that runs when downstream cancels.
        public var receiveCancel: (() -> Void)?

        /// A closure that runs when downstream requests more elements.
        public var receiveRequest: ((Subscribers.Demand) -> Void)?

        /// Creates a publisher that runs the given closures on the events of `upstream`.
        public init(
            upstream: Upstream,
            receiveSubscription: ((any Subscription) -> Void)? = nil,
            receiveOutput: ((Output) -> Void)? = nil,
            receiveCompletion: ((Subscribers.Completion<Failure>) -> Void)? = nil,
            receiveCancel: (() -> Void)? = nil,
            receiveRequest: ((Subscribers.Demand) -> Void)?
        ) {
            self.upstream = upstream
            self.receiveSubscription = receiveSubscription
            self.receiveOutput = receiveOutput
            self.receiveCompletion = receiveCompletion
            self.receiveCancel = receiveCancel
            self.receiveRequest = receiveRequest
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, handlers: self))
        }
    }
}

extension Publishers.HandleEvents {
    /// The subscription of `handleEvents`: runs the closures, then passes each event on.
    ///
    /// **Ownership:** retained by upstream and downstream; releases both on completion or cancel.
    ///
    /// **Thread safety:** `request` and `cancel` are safe from any thread; closures run outside the lock.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
        CustomPlaygroundDisplayConvertible
    where Downstream.Input == Output, Downstream.Failure == Failure {
        typealias Input = Output
        typealias Failure = Upstream.Failure

        private let lock = Lock()
        private var machine: ForwardingStateMachine<Downstream>  // Guarded by lock.
        private let handlers: Publishers.HandleEvents<Upstream>

        init(downstream: Downstream, handlers: Publishers.HandleEvents<Upstream>) {
            machine = ForwardingStateMachine(downstream: downstream)
            self.handlers = handlers
        }

        var description: String { "HandleEvents" }

        var playgroundDescription: Any { description }

        func receive(subscription: any Subscription) {
            guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
                subscription.cancel()
                return
            }
            handlers.receiveSubscription?(subscription)
            downstream.receive(subscription: self)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            guard let downstream = lock.withLock({ machine.downstreamForValue() }) else { return .none }
            handlers.receiveOutput?(input)
            let more = downstream.receive(input)
            // Demand returned from `receive(_:)` is a request too, and Combine reports it as one.
            if more > 0 { handlers.receiveRequest?(more) }
            return more
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            guard let downstream = lock.withLock({ machine.upstreamCompleted() }) else { return }
            handlers.receiveCompletion?(completion)
            downstream.receive(completion: completion)
        }

        func request(_ demand: Subscribers.Demand) {
            guard let upstream = lock.withLock({ machine.upstreamForDemand() }) else { return }
            handlers.receiveRequest?(demand)
            // Passed on as it is, a demand of zero too, as Combine passes it: upstream decides what it means.
            upstream.request(demand)
        }

        func cancel() {
            guard let upstream = lock.withLock({ machine.cancelled() }) else { return }
            handlers.receiveCancel?()
            upstream.cancel()
        }
    }
}
