extension Publisher {
    /// Republishes all elements that match a provided closure.
    ///
    /// Each element the closure rejects is replaced by a request for one more from upstream.
    ///
    ///     let cancellable = [1, 2, 3, 4].publisher
    ///         .filter { $0.isMultiple(of: 2) }
    ///         .sink { print($0) }
    ///     // Prints: 2 4 (one per line)
    ///
    /// - Parameter isIncluded: A closure that returns whether to republish the element.
    /// - Returns: A publisher that republishes the elements that satisfy the closure.
    @inlinable
    public func filter(_ isIncluded: @escaping (Output) -> Bool) -> Publishers.Filter<Self> {
        Publishers.Filter(upstream: self, isIncluded: isIncluded)
    }

    /// Republishes all elements that match a closure that can throw; a thrown error fails the
    /// stream and cancels upstream.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .tryFilter { $0 != 2 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 1 3 finished (one per line)
    ///
    /// - Parameter isIncluded: A closure that returns whether to republish the element, or throws.
    /// - Returns: A publisher that republishes the elements that satisfy the closure.
    public func tryFilter(_ isIncluded: @escaping (Output) throws -> Bool) -> Publishers.TryFilter<Self> {
        Publishers.TryFilter(upstream: self, isIncluded: isIncluded)
    }
}

extension Publishers {
    /// A publisher that republishes all elements that match a provided closure.
    ///
    /// **Ownership:** a value; its subscriber retains the closure until the stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct Filter<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that indicates whether to republish an element.
        public let isIncluded: (Upstream.Output) -> Bool

        /// Creates a publisher that republishes the elements of `upstream` that satisfy `isIncluded`.
        @inlinable
        public init(upstream: Upstream, isIncluded: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.isIncluded = isIncluded
        }

        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(FilterInner(downstream: subscriber, isIncluded: isIncluded))
        }
    }

    /// A publisher that republishes all elements that match a closure that can throw.
    ///
    /// **Ownership:** a value; its subscription retains the closure until the stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct TryFilter<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that indicates whether to republish an element, or throws.
        public let isIncluded: (Upstream.Output) throws -> Bool

        /// Creates a publisher that republishes the elements of `upstream` that satisfy `isIncluded`.
        public init(upstream: Upstream, isIncluded: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.isIncluded = isIncluded
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let forwarding = TryFilterForwarding<Output, Upstream.Failure>(isIncluded: isIncluded)
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }
}

// Upstream's subscription goes straight to downstream: no lock, no allocation per value. Generic
// over what it touches only, not nested in the publisher, so that long chains stay small types
// the optimizer still specializes.
// A rejected value asks upstream for one more in its place. Inlinable, as `MapInner` is.
@usableFromInline
internal struct FilterInner<Downstream: Subscriber>: Subscriber, CustomStringConvertible {
    @usableFromInline typealias Input = Downstream.Input
    @usableFromInline typealias Failure = Downstream.Failure

    @usableFromInline let combineIdentifier: CombineIdentifier
    @usableFromInline let downstream: Downstream
    @usableFromInline let isIncluded: (Input) -> Bool

    @inlinable
    init(downstream: Downstream, isIncluded: @escaping (Input) -> Bool) {
        combineIdentifier = CombineIdentifier()
        self.downstream = downstream
        self.isIncluded = isIncluded
    }

    @usableFromInline var description: String { "Filter" }

    @inlinable
    func receive(subscription: any Subscription) {
        downstream.receive(subscription: subscription)
    }

    @inlinable
    func receive(_ input: Input) -> Subscribers.Demand {
        isIncluded(input) ? downstream.receive(input) : .max(1)
    }

    @inlinable
    func receive(completion: Subscribers.Completion<Failure>) {
        downstream.receive(completion: completion)
    }
}

extension Publishers.Filter {
    /// Fuses two filters into one ``Publishers/Filter``, as Combine does.
    ///
    ///     let cancellable = [1, 2, 3, 4].publisher.filter { $0 > 1 }.filter { $0 < 4 }.sink { print($0) }
    ///     // Prints: 2 3 (one per line)
    @inlinable
    public func filter(_ isIncluded: @escaping (Output) -> Bool) -> Publishers.Filter<Upstream> {
        let first = self.isIncluded
        return Publishers.Filter(upstream: upstream) { first($0) && isIncluded($0) }
    }

    /// Fuses this filter with a throwing one into one ``Publishers/TryFilter``, as Combine does.
    public func tryFilter(_ isIncluded: @escaping (Output) throws -> Bool) -> Publishers.TryFilter<Upstream> {
        let first = self.isIncluded
        return Publishers.TryFilter(upstream: upstream) { try first($0) && isIncluded($0) }
    }
}

extension Publishers.TryFilter {
    /// Fuses this throwing filter with another filter into one stage, as Combine does.
    ///
    ///     let cancellable = [1, 2, 3, 4].publisher.tryFilter { $0 > 1 }
    ///         .filter { $0 < 4 }
    ///         .sink(receiveCompletion: { _ in }, receiveValue: { print($0) })
    ///     // Prints: 2 3 (one per line)
    public func filter(_ isIncluded: @escaping (Output) -> Bool) -> Publishers.TryFilter<Upstream> {
        let first = self.isIncluded
        return Publishers.TryFilter(upstream: upstream) { try first($0) && isIncluded($0) }
    }

    /// Fuses two throwing filters into one stage, as Combine does.
    ///
    ///     let cancellable = [1, 2, 3, 4].publisher.tryFilter { $0 > 1 }
    ///         .tryFilter { $0 < 4 }
    ///         .sink(receiveCompletion: { _ in }, receiveValue: { print($0) })
    ///     // Prints: 2 3 (one per line)
    public func tryFilter(_ isIncluded: @escaping (Output) throws -> Bool) -> Publishers.TryFilter<Upstream> {
        let first = self.isIncluded
        return Publishers.TryFilter(upstream: upstream) { try first($0) && isIncluded($0) }
    }
}

/// The step of `tryFilter`: send, drop, or fail with what the closure threw.
private struct TryFilterForwarding<Input, UpstreamFailure: Error>: Forwarding {
    typealias Output = Input
    typealias Failure = any Error

    var name: String { "TryFilter" }

    let isIncluded: (Input) throws -> Bool

    mutating func receive(_ input: Input) -> ForwardingStep<Input, any Error> {
        do {
            return try isIncluded(input) ? .send(input) : .drop
        } catch {
            return .fail(error)
        }
    }

    func failure(from error: UpstreamFailure) -> any Error { error }
}
