extension Publisher where Failure == Never {
    /// Assigns each element from a publisher to a property on an object.
    ///
    /// The returned cancellable keeps the subscription, and the object, alive until it is
    /// cancelled or the publisher finishes (Combine retains the object too).
    ///
    ///     final class Label { var text = "" }
    ///     let label = Label(); let c = Just("hi").assign(to: \.text, on: label); print(label.text)
    ///     // Prints: hi
    ///
    /// - Returns: A cancellable that cancels the subscription when cancelled or deinitialized.
    public func assign<Root>(to keyPath: ReferenceWritableKeyPath<Root, Output>, on object: Root) -> AnyCancellable {
        let subscriber = Subscribers.Assign(object: object, keyPath: keyPath)
        subscribe(subscriber)
        return AnyCancellable(subscriber)
    }

    /// Republishes elements received from a publisher, by assigning them to a property marked as
    /// a publisher (`$property` of a `@Published` property).
    ///
    /// The subscription lives as long as the property: it is cancelled when the `Published`
    /// storage deinitializes with its object. No cancellable is returned.
    ///
    ///     final class Model { @Published var count = 0 }
    ///     let model = Model(); [1, 2].publisher.assign(to: &model.$count); print(model.count)
    ///     // Prints: 2
    public func assign(to published: inout Published<Output>.Publisher) {
        subscribe(PublishedAssignment(storage: published.storage))
    }
}

extension Subscribers {
    /// A simple subscriber that assigns received elements to a property indicated by a key path.
    ///
    /// **Ownership:** retains the object and the subscription until completion or cancel.
    ///
    /// **Thread safety:** safe to call from any thread; assignments happen on the thread that
    /// delivers the value.
    public final class Assign<Root, Input>: Subscriber, Cancellable, CustomStringConvertible, CustomReflectable,
        CustomPlaygroundDisplayConvertible, @unchecked Sendable
    {
        // @unchecked Sendable: `state` is only touched inside `lock`; `keyPath` is immutable.
        public typealias Failure = Never

        /// Whether the subscriber is still assigning.
        private enum State {
            /// Holding the object, waiting for the subscription. Next: `.subscribed`, `.terminal`.
            case awaitingSubscription(Root)
            /// Assigning every value. Next: `.terminal`.
            case subscribed(Root, any Subscription)
            /// Completed or cancelled; object and subscription released. Final.
            case terminal
        }

        private let lock = Lock()
        private var state: State  // Guarded by lock.

        /// The object that contains the property to assign, until completion or cancel.
        public var object: Root? {
            lock.withLock {
                switch state {
                case .awaitingSubscription(let object), .subscribed(let object, _): object
                case .terminal: nil
                }
            }
        }

        /// The key path that indicates the property to assign.
        public let keyPath: ReferenceWritableKeyPath<Root, Input>

        /// Creates a subscriber to assign the value of a property indicated by a key path.
        public init(object: Root, keyPath: ReferenceWritableKeyPath<Root, Input>) {
            state = .awaitingSubscription(object)
            self.keyPath = keyPath
        }

        public var description: String { "Assign \(Root.self)." }

        public var customMirror: Mirror {
            Mirror(self, children: ["object": object as Any, "keyPath": keyPath])
        }

        public var playgroundDescription: Any { description }

        public func receive(subscription: any Subscription) {
            let accepted = lock.withLock { () -> Bool in
                guard case .awaitingSubscription(let object) = state else { return false }
                state = .subscribed(object, subscription)
                return true
            }
            if accepted {
                subscription.request(.unlimited)
            } else {
                subscription.cancel()
            }
        }

        public func receive(_ value: Input) -> Subscribers.Demand {
            let object = lock.withLock { () -> Root? in
                guard case .subscribed(let object, _) = state else { return nil }
                return object
            }
            object?[keyPath: keyPath] = value
            return .none
        }

        public func receive(completion: Subscribers.Completion<Never>) {
            // Taken out and dropped after the lock: releasing the object may run its deinit.
            let released = lock.withLock { () -> State in
                defer { state = .terminal }
                return state
            }
            withExtendedLifetime(released) {}
        }

        public func cancel() {
            let released = lock.withLock { () -> State in
                defer { state = .terminal }
                return state
            }
            if case .subscribed(_, let subscription) = released {
                subscription.cancel()
            }
        }
    }
}

/// The subscriber behind ``Publisher/assign(to:)``: writes each value into a `@Published`
/// property's storage, as its setter does.
///
/// **Ownership:** holds the storage weakly; the storage retains the subscription and cancels it
/// when it deinitializes, so the subscription lives exactly as long as the property.
///
/// **Thread safety:** safe to call from any thread.
private final class PublishedAssignment<Value>: Subscriber, CustomStringConvertible, @unchecked Sendable {
    // Audited: no lock needed because `storage` is a weak reference, set once, read atomically by the runtime.
    typealias Input = Value
    typealias Failure = Never

    private weak var storage: PublishedStorage<Value>?

    init(storage: PublishedStorage<Value>) {
        self.storage = storage
    }

    var description: String { "Assign" }

    func receive(subscription: any Subscription) {
        guard let storage else { return subscription.cancel() }
        storage.retainAssignment(subscription)
        subscription.request(.unlimited)
    }

    func receive(_ input: Value) -> Subscribers.Demand {
        storage?.set(input)
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}
}
