extension Publishers {
    /// A publisher created by applying the merge function to an arbitrary number of upstream
    /// publishers of one type.
    ///
    /// Elements are delivered one at a time, in the order they arrive, as downstream demand allows.
    /// It finishes when every upstream finished (at once, if there are none) and fails on the first
    /// failure, cancelling the others.
    ///
    ///     let merged = Publishers.MergeMany([Just(1), Just(2), Just(3)])
    ///     let cancellable = merged.sink { print($0) }
    ///     // Prints: 1 2 3 (one per line)
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber and the upstream
    /// subscriptions until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct MergeMany<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publishers that this publisher receives and combines elements from.
        public let publishers: [Upstream]

        /// Creates a publisher that merges the given publishers.
        public init(_ upstream: Upstream...) {
            publishers = upstream
        }

        /// Creates a publisher that merges the publishers of a sequence.
        public init<S: Swift.Sequence>(_ upstream: S) where S.Element == Upstream {
            publishers = Array(upstream)
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = FlatMapInner(downstream: subscriber, maxPublishers: .unlimited, name: "Merge")
            subscriber.receive(subscription: inner)
            for publisher in publishers {
                inner.addChild(publisher)
            }
            inner.outerCompleted(.finished)
        }

        /// Adds another publisher of the same type to this merge.
        ///
        ///     let merged = Publishers.MergeMany(Just(1), Just(2)).merge(with: Just(3))
        ///     let cancellable = merged.sink { print($0) }
        ///     // Prints: 1 2 3 (one per line)
        ///
        /// - Returns: A merge of these publishers and `other`.
        public func merge(with other: Upstream) -> Publishers.MergeMany<Upstream> {
            Publishers.MergeMany(publishers + [other])
        }
    }
}

extension Publishers.MergeMany: Equatable where Upstream: Equatable {}
