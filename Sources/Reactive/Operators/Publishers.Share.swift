extension Publisher {
    /// Shares the output of an upstream publisher with multiple subscribers.
    ///
    /// The first subscriber connects: the upstream is subscribed once, through a
    /// ``PassthroughSubject``, and every subscriber attached at that time sees the same elements.
    /// Subscribers that attach later see only what comes after. When the last subscriber leaves,
    /// the upstream subscription is cancelled. The same as
    /// `multicast { PassthroughSubject() }.autoconnect()`.
    ///
    ///     let subject = PassthroughSubject<Int, Never>(), shared = subject.share()
    ///     let a = shared.sink { print("a", $0) }, b = shared.sink { print("b", $0) }
    ///     subject.send(1)  // Prints: a 1, b 1 (one per line)
    ///
    /// - Returns: A class instance that shares elements received from its upstream.
    public func share() -> Publishers.Share<Self> {
        Publishers.Share(upstream: self)
    }
}

extension Publishers {
    /// A publisher that shares the output of an upstream publisher with multiple subscribers.
    ///
    /// **Ownership:** a reference type; retains the upstream and, while subscribers are attached,
    /// the one upstream subscription.
    ///
    /// **Thread safety:** safe to subscribe and cancel from any thread.
    public final class Share<Upstream: Publisher>: Publisher, Equatable, CustomStringConvertible, @unchecked Sendable {
        // @unchecked Sendable: audited: no lock needed because every stored property is immutable
        // (the autoconnect guards its own state).
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        private let inner: Autoconnect<Multicast<Upstream, PassthroughSubject<Output, Failure>>>

        /// Creates a publisher that shares `upstream`.
        public init(upstream: Upstream) {
            self.upstream = upstream
            inner = Autoconnect(upstream: Multicast(upstream: upstream) { PassthroughSubject() })
        }

        public var description: String { "Share" }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            inner.receive(subscriber: subscriber)
        }

        /// Whether both are the same instance.
        public static func == (lhs: Share, rhs: Share) -> Bool {
            lhs === rhs
        }
    }
}
