extension Publisher where Output: Publisher, Output.Failure == Failure {
    /// Republishes elements sent by the most recently received publisher.
    ///
    /// Each publisher the upstream sends replaces the previous one: the previous one is cancelled
    /// and its later elements are dropped. Downstream demand goes to the current publisher; a new
    /// one is asked for the demand still outstanding. The stream finishes when the upstream and the
    /// current publisher finished, and fails when either fails.
    ///
    ///     let outer = PassthroughSubject<PassthroughSubject<Int, Never>, Never>(), a = PassthroughSubject<Int, Never>()
    ///     let cancellable = outer.switchToLatest().sink { print($0) }
    ///     outer.send(a); a.send(1); outer.send(PassthroughSubject()); a.send(2)  // Prints: 1
    ///
    /// - Returns: A publisher of the elements of the latest publisher received.
    public func switchToLatest() -> Publishers.SwitchToLatest<Output, Self> {
        Publishers.SwitchToLatest(upstream: self)
    }
}

extension Publisher where Output: Publisher, Failure == Never {
    /// Republishes elements sent by the most recently received publisher, for an upstream that
    /// cannot fail whose publishers can.
    ///
    ///     let upstream = Just(Fail<Int, URLError>(error: URLError(.badURL)))
    ///     let cancellable = upstream.switchToLatest().sink(receiveCompletion: { print($0) }) { print($0) }
    ///     // Prints: failure(Error Domain=NSURLErrorDomain Code=-1000 "(null)")
    ///
    /// - Returns: A publisher of the elements of the latest publisher received.
    public func switchToLatest() -> Publishers.SwitchToLatest<Output, Publishers.SetFailureType<Self, Output.Failure>> {
        Publishers.SwitchToLatest(upstream: setFailureType(to: Output.Failure.self))
    }
}

extension Publisher where Output: Publisher, Failure == Never, Output.Failure == Never {
    /// Republishes elements sent by the most recently received publisher, when neither can fail.
    ///
    ///     let cancellable = [Just(1), Just(2)].publisher.switchToLatest()
    ///         .sink { print($0) }
    ///     // Prints: 1 2 (one per line)
    ///
    /// - Returns: A publisher of the elements of the latest publisher received.
    public func switchToLatest() -> Publishers.SwitchToLatest<Output, Self> {
        Publishers.SwitchToLatest(upstream: self)
    }
}

extension Publisher where Output: Publisher, Output.Failure == Never {
    /// Republishes elements sent by the most recently received publisher, for an upstream that can
    /// fail whose publishers cannot.
    ///
    ///     let upstream = [Just(1)].publisher.setFailureType(to: URLError.self)
    ///     let cancellable = upstream.switchToLatest().sink(receiveCompletion: { print($0) }) { print($0) }
    ///     // Prints: 1 finished (one per line)
    ///
    /// - Returns: A publisher of the elements of the latest publisher received.
    public func switchToLatest()
        -> Publishers.SwitchToLatest<
            Publishers.SetFailureType<Output, Failure>,
            Publishers.Map<Self, Publishers.SetFailureType<Output, Failure>>
        >
    {
        Publishers.SwitchToLatest(upstream: map { $0.setFailureType(to: Failure.self) })
    }
}

extension Publishers {
    /// A publisher that flattens nested publishers, republishing the elements of the latest one.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber, the upstream
    /// subscription and the current inner subscription until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct SwitchToLatest<P: Publisher, Upstream: Publisher>: Publisher
    where Upstream.Output == P, P.Failure == Upstream.Failure {
        public typealias Output = P.Output
        public typealias Failure = P.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// Creates a publisher that republishes the elements of the latest publisher `upstream` sent.
        public init(upstream: Upstream) {
            self.upstream = upstream
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = SwitchToLatestInner<P, S>(downstream: subscriber)
            // Closures made here, where the types are concrete, keep the per-element path specialized.
            upstream.subscribe(
                RelaySubscriber<P, Failure>(
                    "SwitchToLatest",
                    onSubscription: { inner.receive(subscription: $0) },
                    onValue: { inner.receive($0) },
                    onCompletion: { inner.receive(completion: $0) }
                )
            )
        }
    }
}
