extension Publisher {
    /// Provides a subject to deliver elements to multiple subscribers, made by the given closure
    /// when the first subscriber attaches or on ``ConnectablePublisher/connect()``, whichever comes
    /// first.
    ///
    /// Nothing flows until ``ConnectablePublisher/connect()`` subscribes the subject to this
    /// publisher; every subscriber that attached by then sees every element.
    ///
    ///     let multicast = [1, 2].publisher.multicast { PassthroughSubject<Int, Never>() }
    ///     let a = multicast.sink { print("a", $0) }, b = multicast.sink { print("b", $0) }, c = multicast.connect()
    ///     // Prints: a 1, b 1, a 2, b 2 (one per line)
    ///
    /// - Parameter createSubject: A closure that makes the subject; it runs at most once.
    /// - Returns: A connectable publisher that shares one upstream subscription through the subject.
    public func multicast<S: Subject>(_ createSubject: @escaping () -> S) -> Publishers.Multicast<Self, S>
    where Failure == S.Failure, Output == S.Output {
        Publishers.Multicast(upstream: self, createSubject: createSubject)
    }

    /// Provides the given subject to deliver elements to multiple subscribers.
    ///
    ///     let multicast = [1].publisher.multicast(subject: PassthroughSubject<Int, Never>())
    ///     let a = multicast.sink { print("a", $0) }, b = multicast.sink { print("b", $0) }, c = multicast.connect()
    ///     // Prints: a 1, b 1 (one per line)
    ///
    /// - Parameter subject: The subject that delivers the elements.
    /// - Returns: A connectable publisher that shares one upstream subscription through the subject.
    public func multicast<S: Subject>(subject: S) -> Publishers.Multicast<Self, S>
    where Failure == S.Failure, Output == S.Output {
        Publishers.Multicast(upstream: self) { subject }
    }
}

extension Publishers {
    /// A publisher that uses a subject to deliver elements to multiple subscribers.
    ///
    /// Subscribers attach to the subject; ``connect()`` attaches the subject to the upstream.
    /// While a connection is up, `connect()` returns it again instead of subscribing twice; once it
    /// is cancelled, the next `connect()` subscribes the same subject anew.
    ///
    /// **Ownership:** a reference type; retains the upstream, the closure and (once made) the
    /// subject. The connection's cancellable retains the upstream subscription until cancelled.
    ///
    /// **Thread safety:** safe to use from any thread.
    public final class Multicast<Upstream: Publisher, SubjectType: Subject>: ConnectablePublisher,
        CustomStringConvertible, @unchecked Sendable
    where Upstream.Failure == SubjectType.Failure, Upstream.Output == SubjectType.Output {
        // @unchecked Sendable: `subject` and `connection` are guarded by `lock`; the rest is immutable.
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher that this publisher receives elements from.
        public let upstream: Upstream

        /// A closure to create a new subject that receives and then republishes elements.
        public let createSubject: () -> SubjectType

        private let lock = Lock()
        private var subject: SubjectType?  // Guarded by lock.
        private var connection: MulticastConnection?  // Guarded by lock.

        /// Creates a multicast publisher that makes its subject with `createSubject`.
        public init(upstream: Upstream, createSubject: @escaping () -> SubjectType) {
            self.upstream = upstream
            self.createSubject = createSubject
        }

        public var description: String { "Multicast" }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            lazySubject.subscribe(subscriber)
        }

        /// Subscribes the subject to the upstream, letting elements flow to the subscribers.
        ///
        /// - Returns: A cancellable that cancels the upstream subscription.
        public func connect() -> any Cancellable {
            let subject = lazySubject
            let (existing, created) = lock.withLock { () -> (MulticastConnection?, MulticastConnection?) in
                if let connection { return (connection, nil) }
                let created = MulticastConnection(owner: self)
                connection = created
                return (nil, created)
            }
            if let existing { return existing }
            guard let created else { internalInconsistency("connect made no connection") }
            created.start(upstream.subscribe(subject))
            return created
        }

        /// The subject, made on first use.
        private var lazySubject: SubjectType {
            // The closure is user code: run it outside the lock, and keep the first subject made if
            // two threads race.
            if let existing = lock.withLock({ subject }) { return existing }
            let made = createSubject()
            return lock.withLock {
                if let subject { return subject }
                subject = made
                return made
            }
        }

        fileprivate func connectionEnded(_ ended: MulticastConnection) {
            lock.withLock {
                if connection === ended { connection = nil }
            }
        }
    }
}

/// The cancellable ``Publishers/Multicast/connect()`` returns: it holds the upstream subscription
/// of the subject, and tells the multicast when it is cancelled.
///
/// **Ownership:** retained by whoever connected, and by the multicast while connected.
///
/// **Thread safety:** safe to call from any thread; cancelling more than once does nothing more.
private final class MulticastConnection: Cancellable, @unchecked Sendable {
    // @unchecked Sendable: `state` is guarded by `lock`.
    private enum State {
        /// Made, not yet subscribed. Next: `.connected`, `.cancelled`.
        case starting
        /// Subscribed. Next: `.cancelled`.
        case connected(AnyCancellable)
        /// Cancelled (possibly before it was connected). Final.
        case cancelled
    }

    private let lock = Lock()
    private var state: State = .starting  // Guarded by lock.
    private let ended: (MulticastConnection) -> Void

    init<Upstream, SubjectType>(owner: Publishers.Multicast<Upstream, SubjectType>) {
        ended = { [weak owner] in owner?.connectionEnded($0) }
    }

    func start(_ subscription: AnyCancellable) {
        let keep = lock.withLock { () -> Bool in
            guard case .starting = state else { return false }
            state = .connected(subscription)
            return true
        }
        if !keep { subscription.cancel() }
    }

    func cancel() {
        let subscription = lock.withLock { () -> AnyCancellable?? in
            switch state {
            case .starting:
                state = .cancelled
                return .some(nil)
            case .connected(let subscription):
                state = .cancelled
                return subscription
            case .cancelled:
                return nil
            }
        }
        guard let subscription else { return }
        ended(self)
        subscription?.cancel()
    }
}
