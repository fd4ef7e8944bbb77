import Foundation

extension NotificationCenter {
    /// Returns a publisher that emits events when broadcasting notifications.
    ///
    /// Each subscription observes the center from the moment it is subscribed until it is
    /// cancelled; a notification posted while the subscriber has no demand is dropped for it.
    /// The publisher never completes.
    ///
    ///     let c = NotificationCenter.default.publisher(for: .init("ping")).sink { print($0.name.rawValue) }
    ///     NotificationCenter.default.post(name: .init("ping"), object: nil)
    ///     // Prints: ping
    ///
    /// - Parameters:
    ///   - name: The name of the notification to publish.
    ///   - object: The object posting the named notification; `nil` accepts any sender.
    /// - Returns: A publisher that emits events when broadcasting notifications.
    public func publisher(for name: Notification.Name, object: AnyObject? = nil) -> NotificationCenter.Publisher {
        NotificationCenter.Publisher(center: self, name: name, object: object)
    }

    /// A publisher that emits elements when broadcasting notifications.
    ///
    /// **Ownership:** a value that retains its center and object; each subscription retains the
    /// center's observer token until it is cancelled.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread, and values
    /// arrive on the posting thread.
    public struct Publisher: Reactive.Publisher, @unchecked Sendable {
        // @unchecked Sendable: audited, no lock needed because every stored property is immutable;
        // NotificationCenter is thread-safe, and `object` is only compared by identity.
        public typealias Output = Notification
        public typealias Failure = Never

        /// The notification center this publisher uses as a source.
        public let center: NotificationCenter

        /// The name of notifications published by this publisher.
        public let name: Notification.Name

        /// The object posting the named notification.
        public let object: AnyObject?

        /// Creates a publisher that emits events when broadcasting notifications.
        public init(center: NotificationCenter, name: Notification.Name, object: AnyObject? = nil) {
            self.center = center
            self.name = name
            self.object = object
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Notification, S.Failure == Never {
            let subscription = NotificationSubscription(center: center, downstream: subscriber)
            subscriber.receive(subscription: subscription)
            subscription.observe(name: name, object: object)
        }
    }
}

/// Where an observer block hands its notifications.
private protocol NotificationReceiving: AnyObject, Sendable {
    func post(_ notification: Notification)
}

/// The subscription of ``NotificationCenter/Publisher``: an observer that delivers as many
/// notifications as were requested.
///
/// **Ownership:** retained by its subscriber and, weakly, by the center's observer block; removes the
/// observer on cancel.
///
/// **Thread safety:** safe to call from any thread; notifications posted on several threads at once
/// are delivered one at a time.
private final class NotificationSubscription<Downstream: Subscriber>: Subscription, NotificationReceiving,
    CustomStringConvertible, @unchecked Sendable
where Downstream.Input == Notification, Downstream.Failure == Never {
    // @unchecked Sendable: `state`, `demand`, `pending` and `isDelivering` are guarded by `lock`.
    private enum State {
        /// Subscribed; the observer is being added. Next: `.observing`, `.cancelled`.
        case subscribed(Downstream)
        /// The observer is registered. Next: `.cancelled`.
        case observing(Downstream, any NSObjectProtocol)
        /// Cancelled; the observer is removed. Final.
        case cancelled
    }

    private let lock = Lock()
    private var state: State  // Guarded by lock.
    private var demand = Subscribers.Demand.none  // Guarded by lock.
    /// Notifications accepted (each took one unit of demand) while another post was delivering:
    /// the delivering thread hands them on, so that the subscriber gets one call at a time.
    /// Bounded by the demand.
    private var pending = RingQueue<Notification>()  // Guarded by lock.
    private var isDelivering = false  // Guarded by lock.
    private let center: NotificationCenter  // Immutable.

    init(center: NotificationCenter, downstream: Downstream) {
        self.center = center
        state = .subscribed(downstream)
    }

    var description: String { "NotificationCenter Observer" }

    func observe(name: Notification.Name, object: AnyObject?) {
        // Captured as an existential, so that the @Sendable block holds no generic metatype.
        weak let receiver: (any NotificationReceiving)? = self
        let token = center.addObserver(forName: name, object: object, queue: nil) { notification in
            receiver?.post(notification)
        }
        let stored = lock.withLock { () -> Bool in
            guard case .subscribed(let downstream) = state else { return false }
            state = .observing(downstream, token)
            return true
        }
        if !stored { center.removeObserver(token) }
    }

    func request(_ demand: Subscribers.Demand) {
        lock.withLock { self.demand += demand }
    }

    func cancel() {
        let token = lock.withLock { () -> (any NSObjectProtocol)? in
            defer { state = .cancelled }
            if case .observing(_, let token) = state { return token }
            return nil
        }
        if let token { center.removeObserver(token) }
    }

    fileprivate func post(_ notification: Notification) {
        let downstream = lock.withLock { () -> Downstream? in
            guard case .observing(let downstream, _) = state, demand > 0 else { return nil }
            demand -= 1
            guard !isDelivering else {
                pending.append(notification)
                return nil
            }
            isDelivering = true
            return downstream
        }
        guard let downstream else { return }
        var next: Notification? = notification
        while let current = next {
            let more = downstream.receive(current)
            next = lock.withLock {
                demand += more
                guard case .observing = state, let queued = pending.popFirst() else {
                    pending.removeAll()
                    isDelivering = false
                    return nil
                }
                return queued
            }
        }
    }
}
