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

/// What `catch` and `tryCatch` do when an upstream completes: upstream's failure subscribes the
/// replacement the handler gives, which gets the demand downstream has not used up (or, from
/// `tryCatch`, the handler's error fails the stream); any other completion goes downstream. The rest
/// is ``SequentialSubscription``'s, which is what downstream sees.
///
/// **Ownership:** retained by its upstreams' sources; holds the handler.
///
/// **Thread safety:** its completions arrive from upstream; the handler runs outside the lock.
private final class CatchInner<Upstream: Publisher, NewPublisher: Publisher, Downstream: Subscriber>
where Upstream.Output == NewPublisher.Output, Downstream.Input == Upstream.Output {
    private let subscription: SequentialSubscription<Downstream>
    private let handler: (Upstream.Failure) -> Result<NewPublisher, Downstream.Failure>
    private let convert: (NewPublisher.Failure) -> Downstream.Failure

    init(
        downstream: Downstream,
        name: String,
        handler: @escaping (Upstream.Failure) -> Result<NewPublisher, Downstream.Failure>
    ) where Downstream.Failure == NewPublisher.Failure {
        subscription = SequentialSubscription(downstream: downstream, name: name)
        self.handler = handler
        convert = { $0 }
    }

    init(
        downstream: Downstream,
        name: String,
        handler: @escaping (Upstream.Failure) -> Result<NewPublisher, Downstream.Failure>
    ) where Downstream.Failure == any Error {
        subscription = SequentialSubscription(downstream: downstream, name: name)
        self.handler = handler
        convert = { $0 }
    }

    func start(_ upstream: Upstream) {
        upstream.subscribe(
            subscription.source(generation: 0) { [self] (completion: Subscribers.Completion<Upstream.Failure>, _) in
                upstreamCompleted(completion)
            }
        )
    }

    private func upstreamCompleted(_ completion: Subscribers.Completion<Upstream.Failure>) {
        switch completion {
        case .finished:
            subscription.withMachine { $0.completed(generation: 0) }?.receive(completion: .finished)
        case .failure(let error):
            guard let next = subscription.withMachine({ $0.switchToNext(after: 0) }) else { return }
            switch handler(error) {
            case .success(let replacement):
                replacement.subscribe(
                    subscription.source(generation: next) {
                        [self] (completion: Subscribers.Completion<NewPublisher.Failure>, generation) in
                        replacementCompleted(completion, generation: generation)
                    }
                )
            case .failure(let thrown):
                subscription.withMachine { $0.completed(generation: 0) }?.receive(completion: .failure(thrown))
            }
        }
    }

    private func replacementCompleted(_ completion: Subscribers.Completion<NewPublisher.Failure>, generation: Int) {
        guard let downstream = subscription.withMachine({ $0.completed(generation: generation) }) else { return }
        switch completion {
        case .finished: downstream.receive(completion: .finished)
        case .failure(let error): downstream.receive(completion: .failure(convert(error)))
        }
    }
}
