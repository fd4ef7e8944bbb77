extension Publisher {
    /// Omits elements from the upstream publisher until a given closure returns false, before
    /// republishing all remaining elements.
    ///
    /// Each element omitted is replaced by a request for one more from upstream.
    ///
    ///     let cancellable = [1, 2, 3, 1].publisher
    ///         .drop { $0 < 3 }
    ///         .sink { print($0) }
    ///     // Prints: 3 1 (one per line)
    ///
    /// - Parameter predicate: A closure that returns whether to keep dropping.
    /// - Returns: A publisher that skips elements until the predicate fails.
    public func drop(while predicate: @escaping (Output) -> Bool) -> Publishers.DropWhile<Self> {
        Publishers.DropWhile(upstream: self, predicate: predicate)
    }

    /// Like ``drop(while:)``, with a predicate that can throw; a thrown error fails the stream and
    /// cancels upstream.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .tryDrop { $0 < 2 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 2 3 finished (one per line)
    ///
    /// - Parameter predicate: A closure that returns whether to keep dropping, or throws.
    /// - Returns: A publisher that skips elements until the predicate fails or throws.
    public func tryDrop(while predicate: @escaping (Output) throws -> Bool) -> Publishers.TryDropWhile<Self> {
        Publishers.TryDropWhile(upstream: self, predicate: predicate)
    }
}

extension Publishers {
    /// A publisher that omits elements from upstream until a given closure returns false.
    ///
    /// **Ownership:** a value; its subscriber retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct DropWhile<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that indicates whether to drop the element.
        public let predicate: (Upstream.Output) -> Bool

        /// Creates a publisher that drops the elements of `upstream` while `predicate` holds.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, predicate: predicate))
        }
    }

    /// A publisher that omits elements from upstream until a closure that can throw returns false.
    ///
    /// **Ownership:** a value; its subscription retains the predicate until the stream ends.
    ///
    /// **Thread safety:** value type; the predicate runs on whatever thread upstream delivers on.
    public struct TryDropWhile<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The closure that indicates whether to drop the element, or throws.
        public let predicate: (Upstream.Output) throws -> Bool

        /// Creates a publisher that drops the elements of `upstream` while `predicate` holds.
        public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let forwarding = TryDropWhileForwarding<Output, Upstream.Failure>(predicate: predicate)
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }
}

extension Publishers.DropWhile {
    // Upstream's subscription goes straight to downstream; a dropped element asks upstream for one
    // more. The flag needs no lock: a publisher never makes two `receive` calls at once.
    private final class Inner<Downstream: Subscriber>: Subscriber, CustomStringConvertible
    where Downstream.Input == Output, Downstream.Failure == Failure {
        typealias Input = Output
        typealias Failure = Upstream.Failure

        private let downstream: Downstream
        private let predicate: (Output) -> Bool
        private var isDropping = true  // Touched only from upstream's receive calls, which never overlap.

        init(downstream: Downstream, predicate: @escaping (Output) -> Bool) {
            self.downstream = downstream
            self.predicate = predicate
        }

        var description: String { "DropWhile" }

        func receive(subscription: any Subscription) {
            downstream.receive(subscription: subscription)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            if isDropping {
                if predicate(input) { return .max(1) }
                isDropping = false
            }
            return downstream.receive(input)
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            downstream.receive(completion: completion)
        }
    }
}

/// The step of `tryDrop(while:)`: drop while the predicate holds, then send everything.
private struct TryDropWhileForwarding<Input, UpstreamFailure: Error>: Forwarding {
    typealias Output = Input
    typealias Failure = any Error

    var name: String { "TryDropWhile" }

    let predicate: (Input) throws -> Bool
    var isDropping = true

    mutating func receive(_ input: Input) -> ForwardingStep<Input, any Error> {
        guard isDropping else { return .send(input) }
        do {
            if try predicate(input) { return .drop }
            isDropping = false
            return .send(input)
        } catch {
            return .fail(error)
        }
    }

    func failure(from error: UpstreamFailure) -> any Error { error }
}
