extension Publisher where Output: Equatable {
    /// Publishes only elements that don't match the previous element.
    ///
    /// Each element dropped is replaced by a request for one more from upstream.
    ///
    ///     let cancellable = [1, 1, 2, 2, 3, 1, 1].publisher
    ///         .removeDuplicates()
    ///         .sink { print($0) }
    ///     // Prints: 1 2 3 1 (one per line)
    ///
    /// - Returns: A publisher that consumes duplicate elements.
    public func removeDuplicates() -> Publishers.RemoveDuplicates<Self> {
        removeDuplicates(by: ==)
    }
}

extension Publisher {
    /// Publishes only elements that don't match the previous element, as evaluated by a closure.
    ///
    ///     let cancellable = ["a", "A", "b"].publisher
    ///         .removeDuplicates { $0.lowercased() == $1.lowercased() }
    ///         .sink { print($0) }
    ///     // Prints: a b (one per line)
    ///
    /// - Parameter predicate: A closure that returns whether the previous and the current element
    ///   are duplicates.
    /// - Returns: A publisher that consumes duplicate elements.
    public func removeDuplicates(
        by predicate: @escaping (Output, Output) -> Bool
    ) -> Publishers.RemoveDuplicates<Self> {
        Publishers.RemoveDuplicates(upstream: self, predicate: predicate)
    }

    /// Like ``removeDuplicates(by:)``, with a closure that can throw; a thrown error fails the
    /// stream and cancels upstream.
    ///
    ///     let cancellable = [1, 1, 2].publisher
    ///         .tryRemoveDuplicates { $0 == $1 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 1 2 finished (one per line)
    ///
    /// - Parameter predicate: A closure that returns whether two elements are duplicates, or throws.
    /// - Returns: A publisher that consumes duplicate elements.
    public func tryRemoveDuplicates(
        by predicate: @escaping (Output, Output) throws -> Bool
    ) -> Publishers.TryRemoveDuplicates<Self> {
        Publishers.TryRemoveDuplicates(upstream: self, predicate: predicate)
    }
}

extension Publishers {
    /// A publisher that publishes only elements that don't match the previous element.
    ///
    /// **Ownership:** a value; its subscriber holds the previous element until the stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct RemoveDuplicates<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that returns whether two elements are duplicates.
        public let predicate: (Output, Output) -> Bool

        /// Creates a publisher that drops the elements of `upstream` that duplicate the previous one.
        public init(upstream: Upstream, predicate: @escaping (Output, Output) -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let forwarding = RemoveDuplicatesForwarding<Output, Failure>(predicate: predicate)
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }

    /// A publisher that publishes only elements that don't match the previous element, as evaluated
    /// by a closure that can throw.
    ///
    /// **Ownership:** a value; its subscription holds the previous element until the stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct TryRemoveDuplicates<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that returns whether two elements are duplicates, or throws.
        public let predicate: (Output, Output) throws -> Bool

        /// Creates a publisher that drops the elements of `upstream` that duplicate the previous one.
        public init(upstream: Upstream, predicate: @escaping (Output, Output) throws -> Bool) {
            self.upstream = upstream
            self.predicate = predicate
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let forwarding = TryRemoveDuplicatesForwarding<Output, Upstream.Failure>(predicate: predicate)
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }
}

extension Publishers.RemoveDuplicates {
    /// Fuses two `removeDuplicates` into one ``Publishers/RemoveDuplicates``, as Combine does: an
    /// element is dropped when either predicate calls it a duplicate of the last element passed on
    /// (this one's first).
    ///
    ///     let cancellable = [1, 1, 2, 12, 3].publisher.map { $0 }
    ///         .removeDuplicates()
    ///         .removeDuplicates { $0 % 10 == $1 % 10 }
    ///         .sink { print($0) }
    ///     // Prints: 1 2 3 (one per line)
    ///
    /// - Parameter predicate: A closure that returns whether the previous and the current element
    ///   are duplicates.
    /// - Returns: One publisher that applies both predicates.
    public func removeDuplicates(
        by predicate: @escaping (Output, Output) -> Bool
    ) -> Publishers.RemoveDuplicates<Upstream> {
        let first = self.predicate
        return Publishers.RemoveDuplicates(upstream: upstream) { first($0, $1) || predicate($0, $1) }
    }
}

/// `removeDuplicates`: an element equal to the previous one is dropped and replaced by a request for
/// one more. Runs in ``ForwardingInner``, so that downstream has a subscription of its own (a second
/// cancel or a late completion stops there).
private struct RemoveDuplicatesForwarding<Input, Failure: Error>: Forwarding {
    typealias Output = Input
    typealias UpstreamFailure = Failure

    var name: String { "RemoveDuplicates" }

    let predicate: (Input, Input) -> Bool
    var previous: Input?

    mutating func receive(_ input: Input) -> ForwardingStep<Input, Failure> {
        if let previous, predicate(previous, input) { return .drop }
        previous = input
        return .send(input)
    }
}

private struct TryRemoveDuplicatesForwarding<Input, UpstreamFailure: Error>: Forwarding {
    typealias Output = Input
    typealias Failure = any Error

    var name: String { "TryRemoveDuplicates" }

    let predicate: (Input, Input) throws -> Bool
    var previous: Input?

    mutating func receive(_ input: Input) -> ForwardingStep<Input, any Error> {
        do {
            if let previous, try predicate(previous, input) { return .drop }
            previous = input
            return .send(input)
        } catch {
            return .fail(error)
        }
    }

    func failure(from error: UpstreamFailure) -> any Error { error }
}
