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
    // @unchecked Sendable: `registry` and `soloConduit` are only touched inside `lock`; the solo
    // path's state is atomic.
    @usableFromInline let lock = Lock()
    @usableFromInline var registry = SubjectRegistry<Output, Failure>()  // Guarded by lock.

    /// The lock-free path of ``send(_:)`` while the subject has exactly one subscriber (the usual
    /// case): the ``SoloGate/open`` bit while ``soloAddress`` names that subscriber's conduit, and
    /// above it the number of senders inside. A sender enters with one compare-and-swap and leaves
    /// with one subtraction, instead of taking the lock and retaining and releasing the array of
    /// conduits (bench/reactive.sh `subject`, `subject-var`). Only a lock holder opens or closes it,
    /// and it opens it only while no sender is inside, so a sender inside always reads the conduit
    /// that was current when it entered, which ``soloConduit`` keeps alive until then.
    @usableFromInline let soloGate = Atomic<Int>(0)
    /// The address of the conduit the solo path delivers to; read only by a sender inside the gate,
    /// written only by a lock holder while the gate is closed and empty.
    @usableFromInline let soloAddress = Atomic<UInt>(0)
    /// Keeps the conduit of ``soloAddress`` alive while a sender may be inside (after the gate
    /// closed too, until the gate is empty). Guarded by lock.
    @usableFromInline var soloConduit: SubjectConduitBase<Output, Failure>?

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
            return (nil, openSoloIfPossible())
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
        if enterSolo() {
            let address = UnsafeRawPointer(bitPattern: soloAddress.load(ordering: .relaxed)).unsafelyUnwrapped
            Unmanaged<SubjectConduitBase<Output, Failure>>.fromOpaque(address)._withUnsafeGuaranteedRef {
                $0.offer(input)
            }
            soloGate.wrappingSubtract(SoloGate.sender, ordering: .releasing)
            return
        }
        let (conduits, retired) = lock.withLock {
            () -> (ContiguousArray<SubjectConduitBase<Output, Failure>>, SubjectConduitBase<Output, Failure>?) in
            (registry.conduits, openSoloIfPossible())
        }
        withExtendedLifetime(retired) {}
        SubjectConduitBase.offer(input, toEach: conduits)
    }

    /// Enters the solo path's gate, if it is open.
    @inlinable
    internal func enterSolo() -> Bool {
        var current = soloGate.load(ordering: .relaxed)
        while current & SoloGate.open != 0 {
            let (exchanged, original) = soloGate.compareExchange(
                expected: current,
                desired: current &+ SoloGate.sender,
                ordering: .acquiring
            )
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Closes the solo path before the registry changes: senders already inside finish with the
    /// conduit they entered with. Call with the lock held.
    @inlinable
    internal func closeSolo() {
        soloGate.bitwiseAnd(~SoloGate.open, ordering: .relaxed)
    }

    /// Opens the solo path if the subject has exactly one subscriber, once no sender is inside.
    /// Call with the lock held.
    /// - Returns: A conduit the path no longer needs, for the caller to release outside the lock
    ///   (its deinit may release a subscriber).
    @inlinable
    internal func openSoloIfPossible() -> SubjectConduitBase<Output, Failure>? {
        // Acquiring: the senders that left are done with the conduit they read.
        let gate = soloGate.load(ordering: .acquiring)
        guard gate & SoloGate.open == 0, gate < SoloGate.sender else { return nil }
        let retired = soloConduit
        soloConduit = nil
        guard registry.completion == nil, registry.conduits.count == 1 else { return retired }
        let conduit = registry.conduits[0]
        soloConduit = conduit
        soloAddress.store(UInt(bitPattern: Unmanaged.passUnretained(conduit).toOpaque()), ordering: .relaxed)
        soloGate.store(SoloGate.open, ordering: .releasing)
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
            return (conduits, openSoloIfPossible())
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
            return openSoloIfPossible()
        }
        withExtendedLifetime(retired) {}
    }
}

/// The bits of ``PassthroughSubject``'s solo gate.
@usableFromInline
internal enum SoloGate {
    /// Set while the solo path may be entered. Next: cleared by a lock holder.
    @inlinable static var open: Int { 1 }
    /// One sender inside; the gate counts them above `open`.
    @inlinable static var sender: Int { 2 }
}
