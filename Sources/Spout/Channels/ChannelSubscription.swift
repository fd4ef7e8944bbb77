import EventLoops
import HTTPServer
import Reactive
import Synchronization

/// One HTTP subscriber's feed from a channel: the replay it asked for, then the live events, delivered only as
/// its stream's demand allows (the ``DemandBridge`` asks as the socket drains), with what waits bounded.
///
/// Live events come from the loop's ``ChannelLoopFanout``. Those the demand does not cover wait here, at most
/// ``Limits/events`` events and ``Limits/bytes`` bytes (the replay, which the history holds anyway, does not
/// count). Past that bound the ``Overflow`` policy applies: `disconnect` ends the stream with
/// `event: end {"reason":"overflow"}`, and the client resumes from the history with `Last-Event-ID`; `dropOldest`
/// drops the oldest waiting events and, before the next one it delivers, sends `event: gap` saying how many
/// were dropped after which id. Either way a stalled reader never holds more than its bound, and never slows
/// the publisher or another subscriber.
///
/// **Ownership:** created by the route; held by the fan-out while joined and by its subscriber (the bridge).
///
/// **Thread safety:** confined to its loop: the fan-out and the bridge call it there.
final class ChannelSubscription: Subscription, @unchecked Sendable {
    // @unchecked Sendable: all mutable state is confined to `loop`.

    /// What a subscriber may hold, and what happens past it.
    struct Limits: Sendable {
        var events: Int
        var bytes: Int
        var overflow: Overflow
        /// `?conflate=true`: a live event that arrives while another of the same `event` type waits replaces it
        /// (the replaced one counts in the next `event: gap`), so a reader that is behind gets the newest value
        /// of each type rather than every value.
        var conflate = false
    }

    /// What happens to a subscriber past its bound: the configuration's `channels.overflow`.
    typealias Overflow = SpoutConfiguration.Channels.Overflow

    let loop: EventLoop
    let channel: Channel
    /// The position in the fan-out's list, kept by the fan-out. Loop-confined.
    var fanoutIndex = -1
    private let metrics: ChannelMetrics
    /// The fan-out it joined (nil before it joins and once it has left). Loop-confined.
    private var fanout: ChannelLoopFanout?

    // The loop's serial queue rules out overlapping access, and every access to `feed` and `subscriber` is
    // instantaneous (none is held across a call out to the subscriber, so a re-entrant `request` or `cancel`
    // cannot overlap one).
    #if SPOUT_CHECKED_EXCLUSIVITY
        /// The queue, its bound and demand, as a machine (``ChannelFeed``); this class does what it returns.
        private var feed: ChannelFeed
        /// The stream's bridge, once ``start(_:)`` handed it the subscription; nil once ended.
        private var subscriber: (any Subscriber<ChannelEvent, ChannelStreamEnd>)?
    #else
        // Unchecked: bench/channels.sh `throughput` (fanout -subs 1000: the dynamic checks, a runtime call on
        // every access of every event to every subscriber, were a visible share of the fan-out's CPU).
        /// The queue, its bound and demand, as a machine (``ChannelFeed``); this class does what it returns.
        @exclusivity(unchecked) private var feed: ChannelFeed
        /// The stream's bridge, once ``start(_:)`` handed it the subscription; nil once ended.
        @exclusivity(unchecked) private var subscriber: (any Subscriber<ChannelEvent, ChannelStreamEnd>)?
    #endif

    /// Where the channel was when the subscription joined: its epoch and the sequence the live part starts
    /// after (nil until it joins). Loop-confined.
    private(set) var joinedAt: (epoch: String, sequence: UInt64)?
    /// ``ended``, readable from any thread.
    private let endedFlag = Atomic<Bool>(false)

    /// The name the subscriber gave (`?client=`), for the channel's presence; nil when anonymous.
    let client: String?
    /// Whether the subscriber asked for presence events (`?presence=true`).
    let wantsPresence: Bool

    init(
        loop: EventLoop,
        channel: Channel,
        limits: Limits,
        usesSSE: Bool,
        metrics: ChannelMetrics,
        client: String? = nil,
        wantsPresence: Bool = false
    ) {
        self.client = client
        self.wantsPresence = wantsPresence
        self.loop = loop
        self.channel = channel
        self.metrics = metrics
        self.feed = ChannelFeed(limits: limits, usesSSE: usesSSE, wantsPresence: wantsPresence)
    }

    /// Joins the channel (see ``Channel/join(_:on:resume:now:)``); on the loop. On success the replay waits for
    /// the subscriber's demand and live events arrive from now on.
    func join(resume: Channel.Resume, now: UInt64) -> Channel.Refusal? {
        loop.preconditionInEventLoop()
        // Gone before a deferred join (channels over Redis join once the channel is loaded): nothing to join.
        guard !feed.hasEnded else { return nil }
        switch channel.join(self, on: loop, resume: resume, now: now) {
        case .failure(let refusal):
            return refusal
        case .success(let join):
            fanout = join.fanout
            joinedAt = (join.epoch, join.liveAfter)
            let replayed = feed.join(
                replay: join.replay,
                liveAfter: join.liveAfter,
                lastControlSerial: join.lastControlSerial
            )
            metrics.subscribers.add(1)
            metrics.replayed.increment(by: replayed)
            // A deferred join comes after the bridge asked for events.
            drain()
            return nil
        }
    }

    /// Hands the subscription to `subscriber` (the stream's bridge), which then asks for events.
    func start(_ subscriber: some Subscriber<ChannelEvent, ChannelStreamEnd>) {
        loop.preconditionInEventLoop()
        guard !feed.hasEnded else { return }
        self.subscriber = subscriber
        subscriber.receive(subscription: self)
    }

    /// Whether the subscription has ended (the client left, or the channel ended it); from any thread.
    var hasEnded: Bool { endedFlag.load(ordering: .acquiring) }

    // MARK: Subscription (the bridge, on the loop)

    func request(_ more: Subscribers.Demand) {
        loop.preconditionInEventLoop()
        guard !feed.hasEnded else { return }
        feed.addDemand(more)
        drain()
    }

    func cancel() {
        guard loop.inEventLoop else {
            loop.execute { [self] in cancel() }
            return
        }
        end()
    }

    // MARK: The fan-out (on the loop)

    /// Live events, in order; those this subscription already has (replayed, or delivered in an earlier pass
    /// of the fan-out) are skipped, and so is a live control frame (channels over Redis) it has taken or that
    /// was made before it joined.
    func deliver(_ batch: [ChannelEvent]) {
        for event in batch {
            switch feed.offer(event) {
            case .skipped:
                continue
            case .ended:
                return
            case .queued(let conflated):
                if conflated { metrics.dropped.increment() }
            }
            drain()
            switch feed.enforceBound() {
            case .within:
                break
            case .dropped(let count):
                metrics.dropped.increment(by: count)
            case .disconnect(let leave):
                metrics.overflowDisconnects.increment()
                let subscriber = self.subscriber
                finish(leave: leave)
                subscriber?.receive(completion: .failure(.overflow))
            }
        }
    }

    // MARK: Internals

    /// Hands the subscriber waiting events while its demand lasts (``ChannelFeed/nextDelivery()``). The
    /// subscriber may call ``request(_:)`` or ``cancel()`` from inside `receive`: the feed refuses the nested
    /// drain (``ChannelFeed/beginDrain()``), so such a `request` only adds demand, which this loop's next
    /// `nextDelivery()` takes, in order; a `cancel` ends the feed, and the loop stops.
    private func drain() {
        guard feed.beginDrain() else { return }
        while let next = feed.nextDelivery() {
            guard let subscriber else { continue }
            let more = subscriber.receive(next)
            feed.addDemand(more)
        }
        let delivered = feed.endDrain()
        if delivered > 0 { metrics.delivered.increment(by: delivered) }
    }

    /// Leaves the channel and lets go of everything; once.
    private func end() {
        guard case .ended(let leave) = feed.end() else { return }
        finish(leave: leave)
    }

    /// What the shell does when the feed has ended: tells other threads, drops the subscriber, and leaves the
    /// channel if it had joined.
    private func finish(leave: Bool) {
        endedFlag.store(true, ordering: .releasing)
        subscriber = nil
        if leave, let fanout {
            self.fanout = nil
            channel.leave(self, from: fanout)
            metrics.subscribers.add(-1)
        }
    }
}

/// How a channel stream ends from the channel's side (the client leaving and shutdown end it from the bridge's).
enum ChannelStreamEnd: Error, Sendable {
    /// The subscriber fell past its bound under the `disconnect` policy.
    case overflow
}
