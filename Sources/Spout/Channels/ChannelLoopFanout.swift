import HTTPServer
import Reactive

/// A channel's events on one event loop: subscribed (with unlimited demand) to the channel's `PassthroughSubject`,
/// it gathers events from whatever thread publishes, crosses to its loop once per gathered batch, and hands the
/// batch to each of the loop's ``ChannelSubscription``s.
///
/// This is where a hot publisher meets slow readers without either waiting for the other: receiving an event
/// costs the publisher an append under a short lock (and one `loop.execute` for the first of a batch), whatever
/// the number of subscribers and however stalled they are. Each subscription then bounds what it holds.
///
/// **Ownership:** held by its ``Channel`` while the loop has subscribers, and by the subject's subscription;
/// ``detach()`` cancels that when the last leaves.
///
/// **Thread safety:** ``receive(_:)`` from any thread (a lock); the subscription list is confined to ``loop``.
final class ChannelLoopFanout: Subscriber, @unchecked Sendable {
    // @unchecked Sendable: `inbox` and `upstream` are only touched under `lock`; `subscriptions` only on `loop`.
    typealias Input = ChannelEvent
    typealias Failure = Never

    let loop: EventLoop
    private let lock = Lock()
    private var inbox: [ChannelEvent] = []
    private var drainScheduled = false
    private var upstream: (any Subscription)?
    private var detached = false
    /// The loop's subscribers of the channel. // Loop-confined.
    private var subscriptions: [ChannelSubscription] = []

    init(loop: EventLoop) {
        self.loop = loop
    }

    // MARK: Subscriber (any thread)

    func receive(subscription: any Subscription) {
        let keep: Bool = lock.withLock {
            guard !detached, upstream == nil else { return false }
            upstream = subscription
            return true
        }
        if keep { subscription.request(.unlimited) } else { subscription.cancel() }
    }

    func receive(_ event: ChannelEvent) -> Subscribers.Demand {
        let schedule: Bool = lock.withLock {
            guard !detached else { return false }
            inbox.append(event)
            if drainScheduled { return false }
            drainScheduled = true
            return true
        }
        if schedule { loop.execute { [self] in drain() } }
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}

    // MARK: Loop side

    /// Hands what arrived since the last drain to every subscription, in order.
    private func drain() {
        let batch: [ChannelEvent] = lock.withLock {
            drainScheduled = false
            defer { inbox = [] }
            return inbox
        }
        guard !batch.isEmpty else { return }
        // A subscription may leave while it is handed the batch (its client closed, or it overflowed).
        for subscription in subscriptions {
            subscription.deliver(batch)
        }
    }

    /// Adds a subscription; on the loop, under the channel's lock.
    func add(_ subscription: ChannelSubscription) {
        subscription.fanoutIndex = subscriptions.count
        subscriptions.append(subscription)
    }

    /// Removes a subscription (the last one takes its place: the order of subscribers does not matter, the
    /// order of events does); on the loop, under the channel's lock. Returns whether it was there.
    func remove(_ subscription: ChannelSubscription) -> Bool {
        let index = subscription.fanoutIndex
        guard index >= 0, index < subscriptions.count, subscriptions[index] === subscription else { return false }
        let last = subscriptions.removeLast()
        if index < subscriptions.count {
            subscriptions[index] = last
            last.fanoutIndex = index
        }
        subscription.fanoutIndex = -1
        return true
    }

    var isEmpty: Bool { subscriptions.isEmpty }

    /// Stops receiving: the channel has no subscriber on this loop any more.
    func detach() {
        let subscription: (any Subscription)? = lock.withLock {
            detached = true
            inbox = []
            defer { upstream = nil }
            return upstream
        }
        subscription?.cancel()
    }
}
