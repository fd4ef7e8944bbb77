extension Publisher {
    /// Transforms every element from the upstream publisher with the provided closure.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .map { $0 * 10 }
    ///         .sink { print($0) }
    ///     // Prints: 10 20 30 (one per line)
    ///
    /// - Parameter transform: A closure that takes one element and returns a new element.
    /// - Returns: A publisher that publishes the transformed elements.
    @inlinable
    public func map<T>(_ transform: @escaping (Output) -> T) -> Publishers.Map<Self, T> {
        Publishers.Map(upstream: self, transform: transform)
    }

    /// Transforms every element with a closure that can throw; a thrown error fails the stream
    /// and cancels upstream.
    ///
    ///     let cancellable = [1, 2, 0].publisher
    ///         .tryMap { n -> Int in guard n > 0 else { throw URLError(.badURL) }; return 10 / n }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 10 5 failure(...) (one per line)
    ///
    /// - Parameter transform: A closure that takes one element and returns a new one, or throws.
    /// - Returns: A publisher that publishes the transformed elements or fails with the thrown error.
    public func tryMap<T>(_ transform: @escaping (Output) throws -> T) -> Publishers.TryMap<Self, T> {
        Publishers.TryMap(upstream: self, transform: transform)
    }

    /// Replaces `nil` elements in the stream with the provided element.
    ///
    ///     let cancellable = [1, nil, 3].publisher
    ///         .replaceNil(with: 0)
    ///         .sink { print($0) }
    ///     // Prints: 1 0 3 (one per line)
    ///
    /// - Parameter output: The element to use in place of `nil`.
    /// - Returns: A publisher that replaces `nil` elements from the upstream publisher.
    public func replaceNil<T>(with output: T) -> Publishers.Map<Self, T> where Output == T? {
        Publishers.Map(upstream: self) { $0 ?? output }
    }
}

extension Publishers {
    /// A publisher that transforms all elements from the upstream publisher with a closure.
    ///
    /// **Ownership:** a value; its subscriber retains the closure until the stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct Map<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that transforms elements from the upstream publisher.
        public let transform: (Upstream.Output) -> Output

        /// Creates a publisher that transforms the elements of `upstream` with `transform`.
        @inlinable
        public init(upstream: Upstream, transform: @escaping (Upstream.Output) -> Output) {
            self.upstream = upstream
            self.transform = transform
        }

        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(MapInner(downstream: subscriber, transform: transform))
        }
    }

    /// A publisher that transforms all elements with a closure that can throw.
    ///
    /// **Ownership:** a value; its subscription retains the closure until the stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct TryMap<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that transforms elements from the upstream publisher, or throws.
        public let transform: (Upstream.Output) throws -> Output

        /// Creates a publisher that transforms the elements of `upstream` with `transform`.
        public init(upstream: Upstream, transform: @escaping (Upstream.Output) throws -> Output) {
            self.upstream = upstream
            self.transform = transform
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let forwarding = TryMapForwarding<Upstream.Output, Output, Upstream.Failure>(transform: transform)
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }
}

extension Publishers.Map {
    /// Fuses two transforms into one stage, as Combine does: the result is a single ``Publishers/Map``.
    ///
    ///     let cancellable = [1, 2].publisher.map { $0 + 1 }.map { $0 * 10 }.sink { print($0) }
    ///     // Prints: 20 30 (one per line)
    @inlinable
    public func map<T>(_ transform: @escaping (Output) -> T) -> Publishers.Map<Upstream, T> {
        let first = self.transform
        return Publishers.Map(upstream: upstream) { transform(first($0)) }
    }

    /// Fuses this transform with a throwing one into one ``Publishers/TryMap``, as Combine does.
    public func tryMap<T>(_ transform: @escaping (Output) throws -> T) -> Publishers.TryMap<Upstream, T> {
        let first = self.transform
        return Publishers.TryMap(upstream: upstream) { try transform(first($0)) }
    }
}

// Upstream's subscription goes straight to downstream: no lock, no allocation per value. Generic
// over what it touches only, not nested in the publisher, so that long chains stay small types
// the optimizer still specializes. Inlinable, so that a client's chain is specialized in the
// client module: a value then costs the closure call alone.
@usableFromInline
internal struct MapInner<Input, Downstream: Subscriber>: Subscriber, CustomStringConvertible {
    @usableFromInline typealias Failure = Downstream.Failure

    @usableFromInline let combineIdentifier: CombineIdentifier
    @usableFromInline let downstream: Downstream
    @usableFromInline let transform: (Input) -> Downstream.Input

    @inlinable
    init(downstream: Downstream, transform: @escaping (Input) -> Downstream.Input) {
        combineIdentifier = CombineIdentifier()
        self.downstream = downstream
        self.transform = transform
    }

    @usableFromInline var description: String { "Map" }

    @inlinable
    func receive(subscription: any Subscription) {
        downstream.receive(subscription: subscription)
    }

    @inlinable
    func receive(_ input: Input) -> Subscribers.Demand {
        downstream.receive(transform(input))
    }

    @inlinable
    func receive(completion: Subscribers.Completion<Failure>) {
        downstream.receive(completion: completion)
    }
}

extension Publishers.TryMap {
    /// Fuses this throwing transform with another transform into one stage, as Combine does.
    ///
    ///     let cancellable = [1, 2].publisher.tryMap { $0 + 1 }
    ///         .map { $0 * 10 }
    ///         .sink(receiveCompletion: { _ in }, receiveValue: { print($0) })
    ///     // Prints: 20 30 (one per line)
    public func map<T>(_ transform: @escaping (Output) -> T) -> Publishers.TryMap<Upstream, T> {
        let first = self.transform
        return Publishers.TryMap(upstream: upstream) { transform(try first($0)) }
    }

    /// Fuses two throwing transforms into one stage, as Combine does.
    ///
    ///     let cancellable = [1, 2].publisher.tryMap { $0 + 1 }
    ///         .tryMap { $0 * 10 }
    ///         .sink(receiveCompletion: { _ in }, receiveValue: { print($0) })
    ///     // Prints: 20 30 (one per line)
    public func tryMap<T>(_ transform: @escaping (Output) throws -> T) -> Publishers.TryMap<Upstream, T> {
        let first = self.transform
        return Publishers.TryMap(upstream: upstream) { try transform(try first($0)) }
    }
}

/// The step of `tryMap`: transform, or fail with what the closure threw.
private struct TryMapForwarding<Input, Output, UpstreamFailure: Error>: Forwarding {
    typealias Failure = any Error

    var name: String { "TryMap" }

    let transform: (Input) throws -> Output

    mutating func receive(_ input: Input) -> ForwardingStep<Output, any Error> {
        do {
            return .send(try transform(input))
        } catch {
            return .fail(error)
        }
    }

    func failure(from error: UpstreamFailure) -> any Error { error }
}
