/// A subject that wraps a single value and publishes a new element whenever the value changes.
///
/// A new subscriber receives the current value as soon as it asks for one (inside that request,
/// even one made from `receive(subscription:)`, as in Combine), then every later value. Each
/// subscriber keeps its own demand; a subscriber that had no demand when values were sent receives
/// the newest of them when it next asks, as Combine does. Setting ``value`` sends. After
/// ``send(completion:)`` every subscriber, present or late, gets the completion.
///
///     let subject = CurrentValueSubject<Int, Never>(1)
///     let cancellable = subject.sink { print($0) }
///     subject.value = 2
///     // Prints: 1
///     //         2
///
/// **Ownership:** retains its value, and its subscribers' subscriptions until they complete or
/// cancel; each of those retains the subject too. Retains upstream subscriptions until
/// completion, and cancels them when deinitialized.
///
/// **Thread safety:** safe to call from any thread; `send` may be called from several threads at
/// once, and each subscriber still receives one call at a time.
public final class CurrentValueSubject<Output, Failure: Error>: Subject, CustomStringConvertible,
    @unchecked Sendable
{
    // @unchecked Sendable: `registry` and `currentValue` are only touched inside `lock`.
    private let lock = Lock()
    private var registry = SubjectRegistry<Output, Failure>()  // Guarded by lock.
    private var currentValue: Output  // Guarded by lock.

    /// Creates a subject holding the given initial value.
    public init(_ value: Output) {
        currentValue = value
    }

    deinit {
        let upstreams = registry.takeUpstreams()
        for upstream in upstreams {
            upstream.cancel()
        }
    }

    /// The value wrapped by this subject; setting it sends the new value to the subscribers.
    ///
    /// Once the subject has completed, setting it still stores the value (as in Combine) but sends
    /// nothing.
    public var value: Output {
        get { lock.withLock { currentValue } }
        set {
            let conduits = lock.withLock { () -> ContiguousArray<SubjectConduitBase<Output, Failure>> in
                currentValue = newValue
                return registry.completion == nil ? registry.conduits : []
            }
            SubjectConduitBase.offer(newValue, toEach: conduits)
        }
    }

    public var description: String { "CurrentValueSubject" }

    /// Attaches the subscriber; it receives the current value on its first demand. A subject
    /// that has completed sends it the completion at once instead.
    public func receive<S: Subscriber>(subscriber: S) where Output == S.Input, Failure == S.Failure {
        let attached = lock.withLock { () -> Attachment<S> in
            if let completion = registry.completion { return .completed(completion) }
            let conduit = SubjectConduit(
                downstream: subscriber,
                owner: self,
                latest: currentValue,
                keepsLatest: true,
                name: "CurrentValueSubject"
            )
            registry.attach(conduit)
            return .attached(conduit)
        }
        switch attached {
        case .attached(let conduit):
            conduit.start()
        case .completed(let completion):
            subscriber.receive(subscription: Subscriptions.empty)
            subscriber.receive(completion: completion)
        }
    }

    /// Stores the value and sends it to each subscriber that has demand; the others receive the
    /// newest value when they next ask.
    public func send(_ input: Output) {
        let conduits = lock.withLock { () -> ContiguousArray<SubjectConduitBase<Output, Failure>> in
            guard registry.completion == nil else { return [] }
            currentValue = input
            return registry.conduits
        }
        SubjectConduitBase.offer(input, toEach: conduits)
    }

    /// Sends the completion to every subscriber, after the values they already accepted.
    ///
    /// Later values and completions are ignored.
    public func send(completion: Subscribers.Completion<Failure>) {
        guard let conduits = lock.withLock({ registry.complete(completion) }) else { return }
        for conduit in conduits {
            conduit.finish(completion)
        }
    }

    /// Keeps the upstream subscription and asks it for `.unlimited` at once, as Combine does: the
    /// subject stores every value as its ``value`` whether or not anyone subscribed.
    public func send(subscription: any Subscription) {
        switch lock.withLock({ registry.upstreamArrived(subscription, demandAtOnce: true) }) {
        case .requestUnlimited: subscription.request(.unlimited)
        case .wait: break
        case .cancel: subscription.cancel()
        }
    }
}

extension CurrentValueSubject: SubjectConduitOwner {
    @usableFromInline
    internal func conduitDidRequestDemand() {
        // Nothing to do: upstreams were asked for `.unlimited` when they arrived.
    }

    @usableFromInline
    internal func conduitDidCancel(_ conduit: ObjectIdentifier) {
        lock.withLock { registry.detach(conduit) }
    }
}

extension CurrentValueSubject {
    /// The outcome of a subscription attempt, carried out of the lock.
    private enum Attachment<S: Subscriber> where S.Input == Output, S.Failure == Failure {
        case attached(SubjectConduit<S>)
        case completed(Subscribers.Completion<Failure>)
    }
}
