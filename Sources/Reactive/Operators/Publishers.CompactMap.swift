extension Publisher {
    /// Calls a closure with each element and publishes the non-`nil` results.
    ///
    /// Each `nil` result is replaced by a request for one more element from upstream.
    ///
    ///     let cancellable = ["1", "x", "3"].publisher
    ///         .compactMap { Int($0) }
    ///         .sink { print($0) }
    ///     // Prints: 1 3 (one per line)
    ///
    /// - Parameter transform: A closure that returns an optional value.
    /// - Returns: A publisher of the non-`nil` results of the closure.
    public func compactMap<T>(_ transform: @escaping (Output) -> T?) -> Publishers.CompactMap<Self, T> {
        Publishers.CompactMap(upstream: self, transform: transform)
    }

    /// Calls a closure that can throw with each element and publishes the non-`nil` results; a
    /// thrown error fails the stream and cancels upstream.
    ///
    ///     let cancellable = ["1", "x", "3"].publisher
    ///         .tryCompactMap { Int($0) }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 1 3 finished (one per line)
    ///
    /// - Parameter transform: A closure that returns an optional value, or throws.
    /// - Returns: A publisher of the non-`nil` results of the closure.
    public func tryCompactMap<T>(
        _ transform: @escaping (Output) throws -> T?
    ) -> Publishers.TryCompactMap<Self, T> {
        Publishers.TryCompactMap(upstream: self, transform: transform)
    }
}

extension Publishers {
    /// A publisher that republishes the non-`nil` results of a closure called with each element.
    ///
    /// **Ownership:** a value; its subscriber retains the closure until the stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct CompactMap<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that receives an element and returns an optional value.
        public let transform: (Upstream.Output) -> Output?

        /// Creates a publisher that republishes the non-`nil` results of `transform`.
        public init(upstream: Upstream, transform: @escaping (Upstream.Output) -> Output?) {
            self.upstream = upstream
            self.transform = transform
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(CompactMapInner(downstream: subscriber, transform: transform))
        }
    }

    /// A publisher that republishes the non-`nil` results of a closure that can throw.
    ///
    /// **Ownership:** a value; its subscription retains the closure until the stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct TryCompactMap<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that receives an element and returns an optional value, or throws.
        public let transform: (Upstream.Output) throws -> Output?

        /// Creates a publisher that republishes the non-`nil` results of `transform`.
        public init(upstream: Upstream, transform: @escaping (Upstream.Output) throws -> Output?) {
            self.upstream = upstream
            self.transform = transform
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let forwarding = TryCompactMapForwarding<Upstream.Output, Output, Upstream.Failure>(transform: transform)
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }
}

// Upstream's subscription goes straight to downstream: no lock, no allocation per value. Generic
// over what it touches only, not nested in the publisher, so that long chains stay small types
// the optimizer still specializes.
// A `nil` result asks upstream for one more in its place.
private struct CompactMapInner<Input, Downstream: Subscriber>: Subscriber, CustomStringConvertible {
    typealias Failure = Downstream.Failure

    let combineIdentifier = CombineIdentifier()
    let downstream: Downstream
    let transform: (Input) -> Downstream.Input?

    var description: String { "CompactMap" }

    func receive(subscription: any Subscription) {
        downstream.receive(subscription: subscription)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        guard let output = transform(input) else { return .max(1) }
        return downstream.receive(output)
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        downstream.receive(completion: completion)
    }
}

extension Publishers.CompactMap {
    /// Fuses two optional transforms into one ``Publishers/CompactMap``, as Combine does.
    ///
    ///     let cancellable = ["1", "x", "30"].publisher.compactMap { Int($0) }
    ///         .compactMap { $0 > 9 ? $0 : nil }.sink { print($0) }
    ///     // Prints: 30
    public func compactMap<T>(_ transform: @escaping (Output) -> T?) -> Publishers.CompactMap<Upstream, T> {
        let first = self.transform
        return Publishers.CompactMap(upstream: upstream) { first($0).flatMap(transform) }
    }

    /// Fuses a transform into this optional one: one ``Publishers/CompactMap``, as Combine does.
    public func map<T>(_ transform: @escaping (Output) -> T) -> Publishers.CompactMap<Upstream, T> {
        let first = self.transform
        return Publishers.CompactMap(upstream: upstream) { first($0).map(transform) }
    }
}

extension Publishers.TryCompactMap {
    /// Fuses two throwing optional transforms into one stage, as Combine does.
    ///
    ///     let cancellable = ["1", "x"].publisher.tryCompactMap { Int($0) }
    ///         .compactMap { $0 * 10 }
    ///         .sink(receiveCompletion: { _ in }, receiveValue: { print($0) })
    ///     // Prints: 10
    public func compactMap<T>(
        _ transform: @escaping (Output) throws -> T?
    ) -> Publishers.TryCompactMap<Upstream, T> {
        let first = self.transform
        return Publishers.TryCompactMap(upstream: upstream) { try first($0).flatMap(transform) }
    }
}

/// The step of `tryCompactMap`: send a non-`nil` result, drop a `nil`, or fail.
private struct TryCompactMapForwarding<Input, Output, UpstreamFailure: Error>: Forwarding {
    typealias Failure = any Error

    var name: String { "TryCompactMap" }

    let transform: (Input) throws -> Output?

    mutating func receive(_ input: Input) -> ForwardingStep<Output, any Error> {
        do {
            guard let output = try transform(input) else { return .drop }
            return .send(output)
        } catch {
            return .fail(error)
        }
    }

    func failure(from error: UpstreamFailure) -> any Error { error }
}
