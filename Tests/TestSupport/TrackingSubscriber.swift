import Reactive

/// A subscriber for tests that records everything it receives, in order, in ``history``.
///
/// Tests compare the whole history in one `#expect`:
///
///     let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
///     [1, 2, 3].publisher.subscribe(subscriber)
///     #expect(subscriber.history == [.subscription, .value(1), .value(2)])
///
/// **Ownership:** holds its subscription (strongly) until completion or ``cancel()``.
///
/// **Thread safety:** safe to call from any thread; `onValue` runs outside the lock.
public final class TrackingSubscriber<Input, Failure: Error>: Subscriber, Cancellable, CustomStringConvertible,
    @unchecked Sendable
{
    // @unchecked Sendable: `events` and `subscription` are only touched inside `lock`.

    /// One recorded call.
    public enum Event: CustomStringConvertible {
        case subscription
        case value(Input)
        case completion(Subscribers.Completion<Failure>)

        public var description: String {
            switch self {
            case .subscription: "subscription"
            case .value(let value): "value(\(value))"
            case .completion(.finished): "finished"
            case .completion(.failure(let error)): "failure(\(error))"
            }
        }
    }

    private let lock = Lock()
    private var events: [Event] = []  // Guarded by lock.
    private var storedSubscription: (any Subscription)?  // Guarded by lock.
    private let initialDemand: Subscribers.Demand?
    private let onValue: (TrackingSubscriber, Input) -> Subscribers.Demand
    private let onCompletion: ((TrackingSubscriber) -> Void)?

    /// - Parameters:
    ///   - initialDemand: Requested as soon as the subscription arrives; `nil` requests nothing.
    ///   - onValue: Runs for each value (outside the lock) and returns the extra demand; it may call
    ///     ``request(_:)`` or ``cancel()`` re-entrantly.
    ///   - onCompletion: Runs after a completion is recorded.
    public init(
        initialDemand: Subscribers.Demand? = .unlimited,
        onValue: @escaping (TrackingSubscriber, Input) -> Subscribers.Demand = { _, _ in .none },
        onCompletion: ((TrackingSubscriber) -> Void)? = nil
    ) {
        self.initialDemand = initialDemand
        self.onValue = onValue
        self.onCompletion = onCompletion
    }

    public var description: String { "TrackingSubscriber" }

    /// Everything received so far.
    public var history: [Event] { lock.withLock { events } }

    /// The values received so far.
    public var values: [Input] {
        history.compactMap {
            if case .value(let value) = $0 { return value }
            return nil
        }
    }

    /// The completion, if one arrived.
    public var completion: Subscribers.Completion<Failure>? {
        for event in history {
            if case .completion(let completion) = event { return completion }
        }
        return nil
    }

    /// The subscription received, if any (kept until completion or cancel).
    public var subscription: (any Subscription)? { lock.withLock { storedSubscription } }

    public func receive(subscription: any Subscription) {
        lock.withLock {
            events.append(.subscription)
            storedSubscription = subscription
        }
        if let initialDemand, initialDemand > 0 {
            subscription.request(initialDemand)
        }
    }

    public func receive(_ input: Input) -> Subscribers.Demand {
        lock.withLock { events.append(.value(input)) }
        return onValue(self, input)
    }

    public func receive(completion: Subscribers.Completion<Failure>) {
        lock.withLock {
            events.append(.completion(completion))
            storedSubscription = nil
        }
        onCompletion?(self)
    }

    /// Requests more values through the stored subscription.
    public func request(_ demand: Subscribers.Demand) {
        subscription?.request(demand)
    }

    /// Cancels the stored subscription and lets it go.
    public func cancel() {
        let subscription = lock.withLock { () -> (any Subscription)? in
            defer { storedSubscription = nil }
            return storedSubscription
        }
        subscription?.cancel()
    }
}

extension TrackingSubscriber.Event: Equatable where Input: Equatable, Failure: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.subscription, .subscription): true
        case (.value(let a), .value(let b)): a == b
        case (.completion(let a), .completion(let b)): a == b
        default: false
        }
    }
}

/// A subscription for tests that records the demand requested and whether it was cancelled.
///
/// **Ownership:** held by whoever subscribes with it.
///
/// **Thread safety:** safe to call from any thread.
public final class TrackingSubscription: Subscription, CustomStringConvertible, @unchecked Sendable {
    // @unchecked Sendable: `events` is only touched inside `lock`.

    /// One recorded call.
    public enum Event: Equatable, CustomStringConvertible {
        case requested(Subscribers.Demand)
        case cancelled

        public var description: String {
            switch self {
            case .requested(let demand): "requested(\(demand))"
            case .cancelled: "cancelled"
            }
        }
    }

    private let lock = Lock()
    private var events: [Event] = []  // Guarded by lock.
    private let onRequest: ((Subscribers.Demand) -> Void)?
    private let onCancel: (() -> Void)?

    public init(onRequest: ((Subscribers.Demand) -> Void)? = nil, onCancel: (() -> Void)? = nil) {
        self.onRequest = onRequest
        self.onCancel = onCancel
    }

    public var description: String { "TrackingSubscription" }

    /// Everything requested so far.
    public var history: [Event] { lock.withLock { events } }

    /// The sum of all requested demand.
    public var totalDemand: Subscribers.Demand {
        history.reduce(into: .none) { sum, event in
            if case .requested(let demand) = event { sum += demand }
        }
    }

    public var isCancelled: Bool { history.contains(.cancelled) }

    public func request(_ demand: Subscribers.Demand) {
        lock.withLock { events.append(.requested(demand)) }
        onRequest?(demand)
    }

    public func cancel() {
        lock.withLock { events.append(.cancelled) }
        onCancel?()
    }
}
