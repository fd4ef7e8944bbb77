import Synchronization

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
    // @unchecked Sendable: `registry`, `soloConduit` and `soloLent` are only touched inside `lock`; the solo
    // path's state is atomic.
    @usableFromInline let lock = Lock()
    @usableFromInline var registry = SubjectRegistry<Output, Failure>()  // Guarded by lock.

    /// The lock-free path of ``send(_:)`` while the subject has exactly one subscriber (the usual case):
    /// that subscriber's conduit lends its own lock-free value path here, so a value costs one
    /// compare-and-swap to take the delivery right and one to give it back, with no lock and no array of
    /// conduits retained and released (bench/reactive.sh `subject`, `subject-var`). See ``SoloPath``.
    @usableFromInline let solo = SoloPath()
    /// The conduit ``solo`` names: while ``soloLent``, the only subscriber's; after, until the path is
    /// `off` (a sender may still be delivering to it), kept alive for that sender. Guarded by lock.
    @usableFromInline var soloConduit: SubjectConduitBase<Output, Failure>?
    /// Whether ``soloConduit`` uses ``solo`` as its value path. Guarded by lock.
    @usableFromInline var soloLent = false

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
        let (completion, retired) = lock.withLock {
            () -> (Subscribers.Completion<Failure>?, SubjectConduitBase<Output, Failure>?) in
            if let completion = registry.completion { return (completion, nil) }
            closeSolo()
            registry.attach(conduit)
            return (nil, lendSoloIfPossible())
        }
        withExtendedLifetime(retired) {}
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
        if solo.state.compareExchange(expected: FastPath.lent, desired: FastPath.delivering, ordering: .acquiring)
            .exchanged
        {
            // Holding the delivery right: `address` is stable and its conduit alive until the path is `off`.
            let address = UnsafeRawPointer(bitPattern: solo.address.load(ordering: .relaxed)).unsafelyUnwrapped
            Unmanaged<SubjectConduitBase<Output, Failure>>.fromOpaque(address)._withUnsafeGuaranteedRef {
                $0.deliverOnSoloPath(input)
            }
            if solo.state.compareExchange(
                expected: FastPath.delivering,
                desired: FastPath.lent,
                ordering: .releasing
            ).exchanged {
                return
            }
            soloDeliveryRevoked()
            return
        }
        let (conduits, retired) = lock.withLock {
            () -> (ContiguousArray<SubjectConduitBase<Output, Failure>>, SubjectConduitBase<Output, Failure>?) in
            (registry.conduits, lendSoloIfPossible())
        }
        withExtendedLifetime(retired) {}
        SubjectConduitBase.offer(input, toEach: conduits)
    }

    /// A lock holder took the solo path back while this thread delivered on it (see ``SoloPath``): this
    /// thread still holds the delivery right, and drains the conduit. The path goes `off` under the lock,
    /// where ``soloConduit`` is still the conduit delivered to; the strong copy keeps it alive for the drain.
    @usableFromInline
    internal func soloDeliveryRevoked() {
        let conduit = lock.withLock { () -> SubjectConduitBase<Output, Failure>? in
            solo.state.store(FastPath.off, ordering: .releasing)
            return soloConduit
        }
        conduit?.soloDeliveryRevoked()
    }

    /// Takes the solo path back before the registry changes; a sender still delivering on it finishes
    /// with the conduit it entered with. Call with the lock held.
    @inlinable
    internal func closeSolo() {
        guard soloLent, let soloConduit else { return }
        soloLent = false
        soloConduit.useSoloPath(nil)
    }

    /// Lends the solo path to the only subscriber's conduit, if the subject has exactly one subscriber and
    /// no sender is still on the path. Call with the lock held.
    /// - Returns: A conduit the path no longer needs, for the caller to release outside the lock (its
    ///   deinit may release a subscriber).
    @inlinable
    internal func lendSoloIfPossible() -> SubjectConduitBase<Output, Failure>? {
        // Acquiring: a sender that set `off` is done with the conduit it delivered to.
        guard !soloLent, solo.state.load(ordering: .acquiring) == FastPath.off else { return nil }
        let retired = soloConduit
        soloConduit = nil
        guard registry.completion == nil, registry.conduits.count == 1 else { return retired }
        let conduit = registry.conduits[0]
        soloConduit = conduit
        soloLent = true
        solo.address.store(UInt(bitPattern: Unmanaged.passUnretained(conduit).toOpaque()), ordering: .relaxed)
        conduit.useSoloPath(solo)
        return retired === conduit ? nil : retired
    }

    /// Sends the completion to every subscriber, after the values they already accepted.
    ///
    /// Later values and completions are ignored.
    @inlinable
    public func send(completion: Subscribers.Completion<Failure>) {
        let (conduits, retired) = lock.withLock {
            () -> (ContiguousArray<SubjectConduitBase<Output, Failure>>?, SubjectConduitBase<Output, Failure>?) in
            closeSolo()
            let conduits = registry.complete(completion)
            return (conduits, lendSoloIfPossible())
        }
        withExtendedLifetime(retired) {}
        guard let conduits else { return }
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
        let retired = lock.withLock { () -> SubjectConduitBase<Output, Failure>? in
            closeSolo()
            registry.detach(conduit)
            return lendSoloIfPossible()
        }
        withExtendedLifetime(retired) {}
    }
}
