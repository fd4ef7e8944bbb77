/// The bookkeeping shared by ``PassthroughSubject`` and ``CurrentValueSubject``: their
/// subscribers' conduits, their upstream subscriptions, and whether they have completed.
///
/// Its owner keeps it behind a lock and carries out what each event returns outside the lock.
///
/// **Thread safety:** value type; its owner keeps it behind a lock.
@usableFromInline
internal struct SubjectRegistry<Output, Failure: Error> {
    @usableFromInline internal typealias Conduit = SubjectConduitBase<Output, Failure>

    /// Conduits of the current subscribers, in subscription order. Copied (not locked) to send.
    @usableFromInline internal var conduits: ContiguousArray<Conduit> = []
    /// Subscriptions given by ``Subject/send(subscription:)``; released on completion.
    @usableFromInline var upstreams: [any Subscription] = []
    /// Whether some subscriber has asked for values, so that upstreams were asked for `.unlimited`.
    @usableFromInline var upstreamDemanded = false
    /// Set once; after it nothing is sent and new subscribers get it at once.
    @usableFromInline internal var completion: Subscribers.Completion<Failure>?

    @inlinable
    internal init() {}

    @inlinable
    internal mutating func attach(_ conduit: Conduit) {
        conduits.append(conduit)
    }

    @inlinable
    internal mutating func detach(_ id: ObjectIdentifier) {
        if let index = conduits.firstIndex(where: { ObjectIdentifier($0) == id }) {
            conduits.remove(at: index)
        }
    }

    /// - Returns: The conduits to finish, or `nil` if the subject had already completed.
    @inlinable
    internal mutating func complete(_ completion: Subscribers.Completion<Failure>) -> ContiguousArray<Conduit>? {
        guard self.completion == nil else { return nil }
        self.completion = completion
        let finishing = conduits
        conduits = []
        upstreams = []
        return finishing
    }

    /// What to do with a subscription given by ``Subject/send(subscription:)``.
    @usableFromInline
    internal enum UpstreamAction {
        /// Ask it for `.unlimited` now: a subscriber already wants values.
        case requestUnlimited
        /// Keep it; it is asked for `.unlimited` when a subscriber first asks for values.
        case wait
        /// Cancel it: the subject has completed and will never send again.
        case cancel
    }

    /// - Parameter demandAtOnce: Whether the subject wants values before any subscriber asks
    ///   (``CurrentValueSubject`` stores them).
    @inlinable
    internal mutating func upstreamArrived(_ subscription: any Subscription, demandAtOnce: Bool = false)
        -> UpstreamAction
    {
        guard completion == nil else { return .cancel }
        upstreams.append(subscription)
        return upstreamDemanded || demandAtOnce ? .requestUnlimited : .wait
    }

    /// - Returns: The upstream subscriptions to ask for `.unlimited`, the first time only.
    @inlinable
    internal mutating func downstreamDemanded() -> [any Subscription] {
        guard !upstreamDemanded else { return [] }
        upstreamDemanded = true
        return upstreams
    }

    /// Takes the upstream subscriptions, for the subject's deinit to cancel them.
    @inlinable
    internal mutating func takeUpstreams() -> [any Subscription] {
        defer { upstreams = [] }
        return upstreams
    }
}
