/// A subject that broadcasts elements to downstream subscribers.
///
/// Unlike ``CurrentValueSubject``, a `PassthroughSubject` has no initial value and keeps no
/// buffer: a value sent when a subscriber has no outstanding demand is dropped for that
/// subscriber, and a value sent before anyone subscribes is lost. Each subscriber keeps its own
/// demand. After ``send(completion:)`` every subscriber, present or late, gets the completion.
///
/// Upstream subscriptions handed in by ``send(subscription:)`` (as by
/// ``Publisher/subscribe(_:)-(Subject)``) are asked for `.unlimited` as soon as any subscriber
/// asks for values, as Combine does.
///
///     let subject = PassthroughSubject<Int, Never>()
///     let cancellable = subject.sink { print($0) }
///     subject.send(1)
///     // Prints: 1
///
/// **Ownership:** retains its subscribers' subscriptions until they complete or cancel; each of
/// those retains the subject too. Retains upstream subscriptions until completion, and cancels
/// them when deinitialized.
///
/// **Thread safety:** safe to call from any thread; `send` may be called from several threads at
/// once, and each subscriber still receives one call at a time.
public final class PassthroughSubject<Output, Failure: Error>: Subject, CustomStringConvertible,
    @unchecked Sendable
{
    // @unchecked Sendable: `registry` is only touched inside `lock`.
    @usableFromInline let lock = Lock()
    @usableFromInline var registry = SubjectRegistry<Output, Failure>()  // Guarded by lock.

    /// Creates a subject with no subscribers.
    @inlinable
    public init() {}

    deinit {
        let upstreams = registry.takeUpstreams()
        for upstream in upstreams {
            upstream.cancel()
        }
    }

    @inlinable
    public var description: String { "PassthroughSubject" }

    /// Attaches the subscriber; a subject that has completed sends it the completion at once.
    @inlinable
    public func receive<S: Subscriber>(subscriber: S) where Output == S.Input, Failure == S.Failure {
        let conduit = SubjectConduit(
            downstream: subscriber,
            owner: self,
            latest: nil,
            keepsLatest: false,
            name: "PassthroughSubject"
        )
        let completion = lock.withLock { () -> Subscribers.Completion<Failure>? in
            if let completion = registry.completion { return completion }
            registry.attach(conduit)
            return nil
        }
        if let completion {
            subscriber.receive(subscription: Subscriptions.empty)
            subscriber.receive(completion: completion)
        } else {
            conduit.start()
        }
    }

    /// Sends a value to each subscriber that has demand for it; the others miss it.
    @inlinable
    public func send(_ input: Output) {
        let conduits = lock.withLock { registry.conduits }
        SubjectConduitBase.offer(input, toEach: conduits)
    }

    /// Sends the completion to every subscriber, after the values they already accepted.
    ///
    /// Later values and completions are ignored.
    @inlinable
    public func send(completion: Subscribers.Completion<Failure>) {
        guard let conduits = lock.withLock({ registry.complete(completion) }) else { return }
        for conduit in conduits {
            conduit.finish(completion)
        }
    }

    /// Keeps the upstream subscription and asks it for `.unlimited` once a subscriber wants values.
    @inlinable
    public func send(subscription: any Subscription) {
        switch lock.withLock({ registry.upstreamArrived(subscription) }) {
        case .requestUnlimited: subscription.request(.unlimited)
        case .wait: break
        case .cancel: subscription.cancel()
        }
    }
}

extension PassthroughSubject: SubjectConduitOwner {
    @inlinable
    internal func conduitDidRequestDemand() {
        for upstream in lock.withLock({ registry.downstreamDemanded() }) {
            upstream.request(.unlimited)
        }
    }

    @inlinable
    internal func conduitDidCancel(_ conduit: ObjectIdentifier) {
        lock.withLock { registry.detach(conduit) }
    }
}
