extension Publisher {
    /// Handles errors from an upstream publisher by replacing it with another publisher.
    ///
    /// On failure, the handler's publisher is subscribed with the demand downstream has not used up;
    /// downstream keeps the same subscription throughout.
    ///
    ///     let cancellable = Fail<Int, URLError>(error: URLError(.badURL))
    ///         .catch { _ in Just(0) }
    ///         .sink { print($0) }
    ///     // Prints: 0
    ///
    /// - Parameter handler: A closure that takes the upstream failure and returns a new publisher.
    /// - Returns: A publisher that handles errors from an upstream publisher by replacing the
    ///   failed publisher with another publisher.
    public func `catch`<P: Publisher>(
        _ handler: @escaping (Failure) -> P
    ) -> Publishers.Catch<Self, P> where Output == P.Output {
        Publishers.Catch(upstream: self, handler: handler)
    }

    /// Handles errors from an upstream publisher by either replacing it with another publisher or
    /// throwing a new error.
    ///
    ///     let cancellable = Fail<Int, URLError>(error: URLError(.badURL))
    ///         .tryCatch { _ in Just(0) }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 0 finished (one per line)
    ///
    /// - Parameter handler: A closure that takes the upstream failure and returns a new publisher,
    ///   or throws a new error.
    /// - Returns: A publisher that handles errors from an upstream publisher.
    public func tryCatch<P: Publisher>(
        _ handler: @escaping (Failure) throws -> P
    ) -> Publishers.TryCatch<Self, P> where Output == P.Output {
        Publishers.TryCatch(upstream: self, handler: handler)
    }
}

extension Publishers {
    /// A publisher that handles errors from an upstream publisher by replacing the failed publisher
    /// with another publisher.
    ///
    /// **Ownership:** a value; its subscription retains the handler until upstream completes.
    ///
    /// **Thread safety:** value type; the handler runs on the thread upstream fails on.
    public struct Catch<Upstream: Publisher, NewPublisher: Publisher>: Publisher
    where Upstream.Output == NewPublisher.Output {
        public typealias Output = Upstream.Output
        public typealias Failure = NewPublisher.Failure

        /// The publisher that this publisher receives elements from.
        public let upstream: Upstream

        /// A closure that accepts the upstream failure as input and returns a publisher to replace
        /// the upstream publisher.
        public let handler: (Upstream.Failure) -> NewPublisher

        /// Creates a publisher that replaces a failed `upstream` with the publisher `handler` returns.
        public init(upstream: Upstream, handler: @escaping (Upstream.Failure) -> NewPublisher) {
            self.upstream = upstream
            self.handler = handler
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let handler = handler
            CatchInner<Upstream, NewPublisher, S>(downstream: subscriber, name: "Catch") {
                .success(handler($0))
            }
            .start(upstream)
        }
    }

    /// A publisher that handles errors from an upstream publisher by replacing the failed publisher
    /// with another publisher or producing a new error.
    ///
    /// **Ownership:** a value; its subscription retains the handler until upstream completes.
    ///
    /// **Thread safety:** value type; the handler runs on the thread upstream fails on.
    public struct TryCatch<Upstream: Publisher, NewPublisher: Publisher>: Publisher
    where Upstream.Output == NewPublisher.Output {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher that this publisher receives elements from.
        public let upstream: Upstream

        /// A closure that accepts the upstream failure and returns a replacement publisher, or throws.
        public let handler: (Upstream.Failure) throws -> NewPublisher

        /// Creates a publisher that replaces a failed `upstream` with the publisher `handler` returns.
        public init(upstream: Upstream, handler: @escaping (Upstream.Failure) throws -> NewPublisher) {
            self.upstream = upstream
            self.handler = handler
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let handler = handler
            CatchInner<Upstream, NewPublisher, S>(downstream: subscriber, name: "TryCatch") { error in
                Result { try handler(error) }
            }
            .start(upstream)
        }
    }
}

/// The subscription of `catch` and `tryCatch`: reads upstream, then on failure the replacement,
/// with the demand downstream has not used up.
///
/// **Ownership:** retained by the current upstream and by downstream; releases both on completion
/// or cancel.
///
/// **Thread safety:** `request` and `cancel` are safe from any thread; the handler runs outside the lock.
private final class CatchInner<Upstream: Publisher, NewPublisher: Publisher, Downstream: Subscriber>: Subscription,
    CustomStringConvertible, CustomPlaygroundDisplayConvertible
where Upstream.Output == NewPublisher.Output, Downstream.Input == Upstream.Output {
    private let lock = Lock()
    private var machine: SequentialStateMachine<Downstream>  // Guarded by lock.
    private let name: String
    private let handler: (Upstream.Failure) -> Result<NewPublisher, Downstream.Failure>
    private let convert: (NewPublisher.Failure) -> Downstream.Failure

    init(
        downstream: Downstream,
        name: String,
        handler: @escaping (Upstream.Failure) -> Result<NewPublisher, Downstream.Failure>
    ) where Downstream.Failure == NewPublisher.Failure {
        machine = SequentialStateMachine(downstream: downstream)
        self.name = name
        self.handler = handler
        convert = { $0 }
    }

    init(
        downstream: Downstream,
        name: String,
        handler: @escaping (Upstream.Failure) -> Result<NewPublisher, Downstream.Failure>
    ) where Downstream.Failure == any Error {
        machine = SequentialStateMachine(downstream: downstream)
        self.name = name
        self.handler = handler
        convert = { $0 }
    }

    var description: String { name }

    var playgroundDescription: Any { description }

    func start(_ upstream: Upstream) {
        upstream.subscribe(
            SequentialSource<Upstream.Output, Upstream.Failure>(
                name: name,
                generation: 0,
                onSubscription: { [self] in received(subscription: $0, generation: $1) },
                onValue: { [self] in received($0, generation: $1) },
                onCompletion: { [self] completion, _ in upstreamCompleted(completion) }
            )
        )
    }

    func request(_ demand: Subscribers.Demand) {
        if demand == .none { apiViolation("demand must not be zero") }
        lock.withLock { machine.demandRequested(demand) }?.request(demand)
    }

    func cancel() {
        lock.withLock { machine.cancelled() }?.cancel()
    }

    private func received(subscription: any Subscription, generation: Int) {
        switch lock.withLock({ machine.subscriptionReceived(subscription, generation: generation) }) {
        case .cancel: subscription.cancel()
        case .handOver(let downstream): downstream.receive(subscription: self)
        case .request(let demand): subscription.request(demand)
        case .none: break
        }
    }

    private func received(_ input: Upstream.Output, generation: Int) -> Subscribers.Demand {
        guard let downstream = lock.withLock({ machine.valueReceived(generation: generation) }) else { return .none }
        let more = downstream.receive(input)
        if more > 0 { lock.withLock { machine.demandReturned(more, generation: generation) } }
        return more
    }

    private func upstreamCompleted(_ completion: Subscribers.Completion<Upstream.Failure>) {
        switch completion {
        case .finished:
            lock.withLock { machine.completed(generation: 0) }?.receive(completion: .finished)
        case .failure(let error):
            guard let next = lock.withLock({ machine.switchToNext(after: 0) }) else { return }
            switch handler(error) {
            case .success(let replacement):
                replacement.subscribe(
                    SequentialSource<NewPublisher.Output, NewPublisher.Failure>(
                        name: name,
                        generation: next,
                        onSubscription: { [self] in received(subscription: $0, generation: $1) },
                        onValue: { [self] in received($0, generation: $1) },
                        onCompletion: { [self] in replacementCompleted($0, generation: $1) }
                    )
                )
            case .failure(let thrown):
                lock.withLock { machine.completed(generation: 0) }?.receive(completion: .failure(thrown))
            }
        }
    }

    private func replacementCompleted(_ completion: Subscribers.Completion<NewPublisher.Failure>, generation: Int) {
        guard let downstream = lock.withLock({ machine.completed(generation: generation) }) else { return }
        switch completion {
        case .finished: downstream.receive(completion: .finished)
        case .failure(let error): downstream.receive(completion: .failure(convert(error)))
        }
    }
}
