extension Publisher {
    /// Republishes elements while a predicate closure indicates publishing should continue.
    ///
    /// At the first element that fails the predicate, it cancels upstream and finishes.
    ///
    ///     let cancellable = [1, 2, 3, 1].publisher
    ///         .prefix { $0 < 3 }
    ///         .sink { print($0) }
    ///     // Prints: 1 2 (one per line)
    ///
    /// - Parameter predicate: A closure that returns whether to keep publishing.
    /// - Returns: A publisher that passes through elements until the predicate fails.
    public func prefix(while predicate: @escaping (Output) -> Bool) -> Publishers.PrefixWhile<Self> {
        Publishers.PrefixWhile(upstream: self, predicate: predicate)
    }

    /// Like ``prefix(while:)``, with a predicate that can throw; a thrown error fails the stream
    /// and cancels upstream.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .tryPrefix { $0 < 3 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 1 2 finished (one per line)
    ///
    /// - Parameter predicate: A closure that returns whether to keep publishing, or throws.
    /// - Returns: A publisher that passes through elements until the predicate fails or throws.
    public func tryPrefix(while predicate: @escaping (Output) throws -> Bool) -> Publishers.TryPrefixWhile<Self> {
        Publishers.TryPrefixWhile(upstream: self, predicate: predicate)
    }
}

extension Publishers {
    /// A publisher that republishes elements while a predicate closure indicates publishing should
    /// continue.
    ///
    /// **Ownership:** a value; its subscription retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct PrefixWhile<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that determines whether to keep republishing.
        public let predicate: (Upstream.Output) -> Bool

        /// Creates a publisher that republishes the elements of `upstream` while `predicate` holds.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let forwarding = PrefixWhileForwarding<Output, Failure, Failure>(
                name: "PrefixWhile",
                test: PredicateTest(predicate)
            )
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }

    /// A publisher that republishes elements while a predicate that can throw indicates publishing
    /// should continue.
    ///
    /// **Ownership:** a value; its subscription retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct TryPrefixWhile<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that determines whether to keep republishing, or throws.
        public let predicate: (Upstream.Output) throws -> Bool

        /// Creates a publisher that republishes the elements of `upstream` while `predicate` holds.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let test = PredicateTest<Output, Upstream.Failure, any Error>(throwing: predicate)
            let forwarding = PrefixWhileForwarding(name: "TryPrefixWhile", test: test)
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }
}

/// The step of `prefix(while:)`: send while the predicate holds, then end the stream.
private struct PrefixWhileForwarding<Input, UpstreamFailure: Error, Failure: Error>: Forwarding {
    typealias Output = Input

    let name: String
    let test: PredicateTest<Input, UpstreamFailure, Failure>

    mutating func receive(_ input: Input) -> ForwardingStep<Input, Failure> {
        switch test(input) {
        case .success(true): .send(input)
        case .success(false): .finish
        case .failure(let error): .fail(error)
        }
    }

    func failure(from error: UpstreamFailure) -> Failure { test.failure(from: error) }
}
