extension ConnectablePublisher {
    /// Automates connecting and disconnecting: connects when the first subscriber attaches, and
    /// cancels the connection when the last one cancels or completes.
    ///
    ///     let shared = [1, 2].publisher.multicast { PassthroughSubject<Int, Never>() }.autoconnect()
    ///     let cancellable = shared.sink { print($0) }
    ///     // Prints: 1 2 (one per line)
    ///
    /// - Returns: A publisher that connects to this one on its first subscription.
    public func autoconnect() -> Publishers.Autoconnect<Self> {
        Publishers.Autoconnect(upstream: self)
    }
}

extension Publishers {
    /// A publisher that connects to its connectable upstream when the first subscriber attaches,
    /// and disconnects when none is left.
    ///
    /// A subscriber that attaches after the last one left connects again.
    ///
    /// **Ownership:** a reference type; retains the upstream and, while subscribers are attached,
    /// the connection.
    ///
    /// **Thread safety:** safe to subscribe and cancel from any thread.
    public final class Autoconnect<Upstream: ConnectablePublisher>: Publisher, CustomStringConvertible,
        @unchecked Sendable
    {
        // @unchecked Sendable: `state` is guarded by `lock`; `upstream` is immutable.
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// How many subscribers are attached, and the connection they share.
        private enum State {
            /// No subscriber; not connected. Next: `.connecting`.
            case disconnected
            /// Subscribers are attached; the first one's thread is calling `connect()`.
            /// Next: `.connected`, `.disconnected`.
            case connecting(subscribers: Int)
            /// Subscribers are attached and the connection is up. Next: `.disconnected`.
            case connected(subscribers: Int, connection: any Cancellable)
        }

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        private let lock = Lock()
        private var state: State = .disconnected  // Guarded by lock.

        /// Creates a publisher that connects to `upstream` on its first subscription.
        public init(upstream: Upstream) {
            self.upstream = upstream
        }

        public var description: String { "Autoconnect" }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let shouldConnect = lock.withLock { () -> Bool in
                switch state {
                case .disconnected:
                    state = .connecting(subscribers: 1)
                    return true
                case .connecting(let subscribers):
                    state = .connecting(subscribers: subscribers + 1)
                    return false
                case .connected(let subscribers, let connection):
                    state = .connected(subscribers: subscribers + 1, connection: connection)
                    return false
                }
            }
            let inner = AutoconnectInner(downstream: subscriber, owner: self)
            // Closures made here, where the types are concrete, keep the per-element path specialized.
            upstream.subscribe(
                RelaySubscriber<Output, Failure>(
                    "Autoconnect",
                    onSubscription: { inner.receive(subscription: $0) },
                    onValue: { inner.receive($0) },
                    onCompletion: { inner.receive(completion: $0) }
                )
            )
            guard shouldConnect else { return }
            let connection = upstream.connect()
            let keep = lock.withLock { () -> Bool in
                guard case .connecting(let subscribers) = state else { return false }
                state = .connected(subscribers: subscribers, connection: connection)
                return true
            }
            // Every subscriber left while connecting (a synchronous upstream completes at once).
            if !keep { connection.cancel() }
        }

        /// A subscriber left; disconnects when it was the last.
        func subscriberLeft() {
            let connection = lock.withLock { () -> (any Cancellable)? in
                switch state {
                case .disconnected:
                    return nil
                case .connecting(let subscribers):
                    state = subscribers > 1 ? .connecting(subscribers: subscribers - 1) : .disconnected
                    return nil
                case .connected(let subscribers, let connection):
                    guard subscribers <= 1 else {
                        state = .connected(subscribers: subscribers - 1, connection: connection)
                        return nil
                    }
                    state = .disconnected
                    return connection
                }
            }
            connection?.cancel()
        }
    }
}

/// Sits between ``Publishers/Autoconnect`` and one subscriber, so that the autoconnect learns when
/// the subscriber leaves. Values pass through; nothing passes after it left.
///
/// **Ownership:** retained by the upstream's relay subscriber and by the downstream; retains both,
/// and the autoconnect, until the subscriber leaves.
///
/// **Thread safety:** safe to call from any thread.
internal final class AutoconnectInner<Downstream: Subscriber, Upstream: ConnectablePublisher>: Subscription,
    CustomStringConvertible, @unchecked Sendable
where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure {
    // @unchecked Sendable: `state` is guarded by `lock`.
    typealias Input = Downstream.Input
    typealias Failure = Downstream.Failure

    private enum State {
        /// Waiting for the upstream subscription. Next: `.subscribed`, `.left`.
        case awaitingSubscription(Downstream, Publishers.Autoconnect<Upstream>)
        /// Attached. Next: `.left`.
        case subscribed(Downstream, Publishers.Autoconnect<Upstream>, any Subscription)
        /// Completed or cancelled; references released. Final.
        case left
    }

    private let lock = Lock()
    private var state: State  // Guarded by lock.

    init(downstream: Downstream, owner: Publishers.Autoconnect<Upstream>) {
        state = .awaitingSubscription(downstream, owner)
    }

    var description: String { "Autoconnect" }

    func receive(subscription: any Subscription) {
        let downstream = lock.withLock { () -> Downstream? in
            guard case .awaitingSubscription(let downstream, let owner) = state else { return nil }
            state = .subscribed(downstream, owner, subscription)
            return downstream
        }
        guard let downstream else {
            subscription.cancel()
            return
        }
        downstream.receive(subscription: self)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        let downstream = lock.withLock { () -> Downstream? in
            guard case .subscribed(let downstream, _, _) = state else { return nil }
            return downstream
        }
        return downstream?.receive(input) ?? .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        guard let (downstream, owner, _) = leave() else { return }
        downstream.receive(completion: completion)
        owner.subscriberLeft()
    }

    func request(_ demand: Subscribers.Demand) {
        let subscription = lock.withLock { () -> (any Subscription)? in
            guard case .subscribed(_, _, let subscription) = state else { return nil }
            return subscription
        }
        subscription?.request(demand)
    }

    func cancel() {
        guard let (_, owner, subscription) = leave() else { return }
        subscription?.cancel()
        owner.subscriberLeft()
    }

    private func leave() -> (Downstream, Publishers.Autoconnect<Upstream>, (any Subscription)?)? {
        lock.withLock {
            switch state {
            case .awaitingSubscription(let downstream, let owner):
                state = .left
                return (downstream, owner, nil)
            case .subscribed(let downstream, let owner, let subscription):
                state = .left
                return (downstream, owner, subscription)
            case .left:
                return nil
            }
        }
    }
}
