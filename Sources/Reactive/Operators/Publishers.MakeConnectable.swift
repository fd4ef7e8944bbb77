extension Publisher where Failure == Never {
    /// Creates a connectable wrapper around the publisher: nothing flows to its subscribers until
    /// ``ConnectablePublisher/connect()`` is called.
    ///
    ///     let connectable = [1, 2].publisher.makeConnectable()
    ///     let a = connectable.sink { print("a", $0) }, b = connectable.sink { print("b", $0) }, c = connectable.connect()
    ///     // Prints: a 1, b 1, a 2, b 2 (one per line)
    ///
    /// - Returns: A connectable publisher wrapping this one.
    public func makeConnectable() -> Publishers.MakeConnectable<Self> {
        Publishers.MakeConnectable(upstream: self)
    }
}

extension Publishers {
    /// A connectable publisher that wraps a publisher which cannot fail, sharing one upstream
    /// subscription among its subscribers once connected.
    ///
    /// **Ownership:** a value type sharing one ``Publishers/Multicast`` (with a
    /// ``PassthroughSubject``) among its copies.
    ///
    /// **Thread safety:** safe to use from any thread.
    public struct MakeConnectable<Upstream: Publisher>: ConnectablePublisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        private let multicast: Multicast<Upstream, PassthroughSubject<Output, Failure>>

        /// Creates a connectable publisher wrapping `upstream`.
        public init(upstream: Upstream) {
            multicast = Multicast(upstream: upstream) { PassthroughSubject() }
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            multicast.receive(subscriber: subscriber)
        }

        /// Subscribes to the upstream, letting elements flow to the subscribers.
        ///
        /// - Returns: A cancellable that cancels the upstream subscription.
        public func connect() -> any Cancellable {
            multicast.connect()
        }
    }
}
