extension Publisher {
    /// Publishes the value of a key path of each element.
    ///
    ///     let cancellable = ["a", "bcd"].publisher
    ///         .map(\.count)
    ///         .sink { print($0) }
    ///     // Prints: 1 3 (one per line)
    ///
    /// - Parameter keyPath: The key path of a property on `Output`.
    /// - Returns: A publisher that publishes the value of the key path.
    public func map<T>(_ keyPath: KeyPath<Output, T>) -> Publishers.MapKeyPath<Self, T> {
        Publishers.MapKeyPath(upstream: self, keyPath: keyPath)
    }

    /// Publishes the values of two key paths of each element, as a tuple.
    ///
    ///     let cancellable = ["ab"].publisher
    ///         .map(\.count, \.first)
    ///         .sink { print($0) }
    ///     // Prints: (2, Optional("a"))
    ///
    /// - Returns: A publisher that publishes the values of the two key paths as a tuple.
    public func map<T0, T1>(
        _ keyPath0: KeyPath<Output, T0>,
        _ keyPath1: KeyPath<Output, T1>
    ) -> Publishers.MapKeyPath2<Self, T0, T1> {
        Publishers.MapKeyPath2(upstream: self, keyPath0: keyPath0, keyPath1: keyPath1)
    }

    /// Publishes the values of three key paths of each element, as a tuple.
    ///
    ///     let cancellable = ["ab"].publisher
    ///         .map(\.count, \.first, \.last)
    ///         .sink { print($0) }
    ///     // Prints: (2, Optional("a"), Optional("b"))
    ///
    /// - Returns: A publisher that publishes the values of the three key paths as a tuple.
    public func map<T0, T1, T2>(
        _ keyPath0: KeyPath<Output, T0>,
        _ keyPath1: KeyPath<Output, T1>,
        _ keyPath2: KeyPath<Output, T2>
    ) -> Publishers.MapKeyPath3<Self, T0, T1, T2> {
        Publishers.MapKeyPath3(upstream: self, keyPath0: keyPath0, keyPath1: keyPath1, keyPath2: keyPath2)
    }
}

extension Publishers {
    /// A publisher that publishes the value of a key path of each upstream element.
    ///
    /// **Ownership:** a value; its subscriber retains the key path until the stream ends.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct MapKeyPath<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The key path of a property on the upstream's output.
        public let keyPath: KeyPath<Upstream.Output, Output>

        /// Creates a publisher that publishes the value of `keyPath` of each element of `upstream`.
        public init(upstream: Upstream, keyPath: KeyPath<Upstream.Output, Output>) {
            self.upstream = upstream
            self.keyPath = keyPath
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let keyPath = keyPath
            upstream.subscribe(KeyPathInner(name: "ValueForKey", downstream: subscriber) { $0[keyPath: keyPath] })
        }
    }

    /// A publisher that publishes the values of two key paths of each upstream element, as a tuple.
    ///
    /// **Ownership:** a value; its subscriber retains the key paths until the stream ends.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct MapKeyPath2<Upstream: Publisher, Output0, Output1>: Publisher {
        public typealias Output = (Output0, Output1)
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The key path of the first value.
        public let keyPath0: KeyPath<Upstream.Output, Output0>

        /// The key path of the second value.
        public let keyPath1: KeyPath<Upstream.Output, Output1>

        /// Creates a publisher that publishes the values of two key paths of each element of `upstream`.
        public init(
            upstream: Upstream,
            keyPath0: KeyPath<Upstream.Output, Output0>,
            keyPath1: KeyPath<Upstream.Output, Output1>
        ) {
            self.upstream = upstream
            self.keyPath0 = keyPath0
            self.keyPath1 = keyPath1
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let (keyPath0, keyPath1) = (keyPath0, keyPath1)
            upstream.subscribe(
                KeyPathInner(name: "ValueForKeys", downstream: subscriber) {
                    ($0[keyPath: keyPath0], $0[keyPath: keyPath1])
                }
            )
        }
    }

    /// A publisher that publishes the values of three key paths of each upstream element, as a tuple.
    ///
    /// **Ownership:** a value; its subscriber retains the key paths until the stream ends.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct MapKeyPath3<Upstream: Publisher, Output0, Output1, Output2>: Publisher {
        public typealias Output = (Output0, Output1, Output2)
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The key path of the first value.
        public let keyPath0: KeyPath<Upstream.Output, Output0>

        /// The key path of the second value.
        public let keyPath1: KeyPath<Upstream.Output, Output1>

        /// The key path of the third value.
        public let keyPath2: KeyPath<Upstream.Output, Output2>

        /// Creates a publisher that publishes the values of three key paths of each element of `upstream`.
        public init(
            upstream: Upstream,
            keyPath0: KeyPath<Upstream.Output, Output0>,
            keyPath1: KeyPath<Upstream.Output, Output1>,
            keyPath2: KeyPath<Upstream.Output, Output2>
        ) {
            self.upstream = upstream
            self.keyPath0 = keyPath0
            self.keyPath1 = keyPath1
            self.keyPath2 = keyPath2
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let (keyPath0, keyPath1, keyPath2) = (keyPath0, keyPath1, keyPath2)
            upstream.subscribe(
                KeyPathInner(name: "ValueForKeys", downstream: subscriber) {
                    ($0[keyPath: keyPath0], $0[keyPath: keyPath1], $0[keyPath: keyPath2])
                }
            )
        }
    }
}

/// The subscriber of the key-path maps: a value type that hands upstream's subscription through.
private struct KeyPathInner<Input, Downstream: Subscriber>: Subscriber, CustomStringConvertible {
    typealias Failure = Downstream.Failure

    let combineIdentifier = CombineIdentifier()
    let name: String
    let downstream: Downstream
    let project: (Input) -> Downstream.Input

    var description: String { name }

    func receive(subscription: any Subscription) {
        downstream.receive(subscription: subscription)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        downstream.receive(project(input))
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        downstream.receive(completion: completion)
    }
}
