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
    private let limits: Limits
    private let metrics: ChannelMetrics
    /// Whether the stream is SSE (else NDJSON): which encoding's size counts against the byte bound.
    private let usesSSE: Bool
    /// The position in the fan-out's list, kept by the fan-out. Loop-confined.
    var fanoutIndex = -1
    private var fanout: ChannelLoopFanout?

    /// What every event goes through (``deliver(_:)``, ``drain()``), in one place. Loop-confined.
    private struct Feed {
        var subscriber: (any Subscriber<ChannelEvent, ChannelStreamEnd>)?
        /// Waiting events, oldest first from `head`: the replay's, then live ones.
        var queue: [ChannelEvent] = []
        var head = 0
        var replayWaiting = 0
        var liveWaiting = 0
        var liveWaitingBytes = 0
        /// Live events up to this sequence were replayed, published before the subscription joined, or
        /// delivered.
        var liveAfter: UInt64 = 0
        /// The serial of the last live control frame taken, or the last made before the subscription joined.
        var lastLiveControl: UInt64 = 0
        var demand = 0
        /// Events dropped (`dropOldest`, conflation) since the last delivery.
        var missed = 0
        var lastDeliveredID: String?
        var draining = false
        var ended = false
    }

    // The loop's serial queue rules out overlapping access, and every access to `feed` is instantaneous (none is
    // held across a call out to the subscriber, so a re-entrant `request` cannot overlap one).
    #if SPOUT_CHECKED_EXCLUSIVITY
        private var feed = Feed()
    #else
        // Unchecked: bench/channels.sh `throughput` (fanout -subs 1000: the dynamic checks, a runtime call on
        // every access of every event to every subscriber, were a visible share of the fan-out's CPU).
        @exclusivity(unchecked) private var feed = Feed()
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
        self.limits = limits
        self.usesSSE = usesSSE
        self.metrics = metrics
    }

    /// Joins the channel (see ``Channel/join(_:on:resume:now:)``); on the loop. On success the replay waits for
    /// the subscriber's demand and live events arrive from now on.
    func join(resume: Channel.Resume, now: UInt64) -> Channel.Refusal? {
        loop.preconditionInEventLoop()
        // Gone before a deferred join (channels over Redis join once the channel is loaded): nothing to join.
        guard !feed.ended else { return nil }
        switch channel.join(self, on: loop, resume: resume, now: now) {
        case .failure(let refusal):
            return refusal
        case .success(let join):
            fanout = join.fanout
            joinedAt = (join.epoch, join.liveAfter)
            feed.liveAfter = join.liveAfter
            feed.lastLiveControl = join.lastControlSerial
            feed.queue = join.replay
            feed.replayWaiting = join.replay.count
            metrics.subscribers.add(1)
            metrics.replayed.increment(by: join.replay.lazy.filter { !$0.isControl }.count)
            // A deferred join comes after the bridge asked for events.
            drain()
            return nil
        }
    }

    /// Hands the subscription to `subscriber` (the stream's bridge), which then asks for events.
    func start(_ subscriber: some Subscriber<ChannelEvent, ChannelStreamEnd>) {
        loop.preconditionInEventLoop()
        guard !feed.ended else { return }
        feed.subscriber = subscriber
        subscriber.receive(subscription: self)
    }

    /// Whether the subscription has ended (the client left, or the channel ended it); from any thread.
    var hasEnded: Bool { endedFlag.load(ordering: .acquiring) }

    // MARK: Subscription (the bridge, on the loop)

    func request(_ more: Subscribers.Demand) {
        loop.preconditionInEventLoop()
        guard !feed.ended else { return }
        addDemand(more)
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
            if let live = event.live {
                guard event.controlSerial > feed.lastLiveControl else { continue }
                feed.lastLiveControl = event.controlSerial
                if live == .restart { feed.liveAfter = 0 }
                if live == .presence, !wantsPresence { continue }
            } else {
                guard event.sequence > feed.liveAfter else { continue }
                feed.liveAfter = event.sequence
            }
            guard !feed.ended else { return }
            if limits.conflate, !event.isControl, feed.liveWaiting > 0 { conflate(with: event) }
            feed.queue.append(event)
            feed.liveWaiting &+= 1
            feed.liveWaitingBytes &+= size(of: event)
            drain()
            if feed.liveWaiting > limits.events || feed.liveWaitingBytes > limits.bytes { overflowed() }
        }
    }

    // MARK: Internals

    private func size(of event: ChannelEvent) -> Int {
        usesSSE ? event.sse.count : event.ndjson.count
    }

    private func addDemand(_ more: Subscribers.Demand) {
        if let count = more.max {
            feed.demand = feed.demand.addingReportingOverflow(count).overflow ? Int.max : feed.demand &+ count
        } else {
            feed.demand = Int.max
        }
    }

    /// Sends waiting events while there is demand. Re-entrant calls (the bridge asking for more from inside a
    /// delivery) only add demand; the outer loop goes on.
    private func drain() {
        guard !feed.draining, !feed.ended else { return }
        feed.draining = true
        defer { feed.draining = false }
        var delivered = 0
        while feed.demand > 0, !feed.ended {
            let next: ChannelEvent
            if feed.missed > 0 {
                next = ChannelEvent.gap(missed: feed.missed, after: feed.lastDeliveredID)
                feed.missed = 0
            } else if let event = popOldest() {
                next = event
            } else {
                break
            }
            if feed.demand != Int.max { feed.demand &-= 1 }
            if !next.isControl {
                feed.lastDeliveredID = next.id
                delivered &+= 1
            }
            if let subscriber = feed.subscriber { addDemand(subscriber.receive(next)) }
        }
        if delivered > 0 { metrics.delivered.increment(by: delivered) }
    }

    private func popOldest() -> ChannelEvent? {
        guard feed.head < feed.queue.count else { return nil }
        let event = feed.queue[feed.head]
        feed.head &+= 1
        if feed.replayWaiting > 0 {
            feed.replayWaiting &-= 1
        } else {
            feed.liveWaiting &-= 1
            feed.liveWaitingBytes &-= size(of: event)
        }
        if feed.head == feed.queue.count {
            feed.queue.removeAll(keepingCapacity: feed.queue.capacity <= 16)
            feed.head = 0
        } else if feed.head >= 32, feed.head &* 2 >= feed.queue.count {
            feed.queue.removeFirst(feed.head)
            feed.head = 0
        }
        return event
    }

    /// Drops the waiting live event of `event`'s type, if any (at most one waits per type, so the scan is short):
    /// `event` takes its place at the end, and the next delivery is preceded by `event: gap` counting it.
    private func conflate(with event: ChannelEvent) {
        let firstLive = feed.head &+ feed.replayWaiting
        var index = feed.queue.count &- 1
        while index >= firstLive {
            let waiting = feed.queue[index]
            if !waiting.isControl, waiting.eventType == event.eventType {
                feed.queue.remove(at: index)
                feed.liveWaiting &-= 1
                feed.liveWaitingBytes &-= size(of: waiting)
                feed.missed &+= 1
                metrics.dropped.increment()
                return
            }
            index &-= 1
        }
    }

    private func overflowed() {
        switch limits.overflow {
        case .disconnect:
            metrics.overflowDisconnects.increment()
            let subscriber = feed.subscriber
            end()
            subscriber?.receive(completion: .failure(.overflow))
        case .dropOldest:
            while feed.liveWaiting > limits.events || feed.liveWaitingBytes > limits.bytes, popOldest() != nil {
                feed.missed &+= 1
                metrics.dropped.increment()
            }
        }
    }

    /// Leaves the channel and lets go of everything; once.
    private func end() {
        guard !feed.ended else { return }
        feed.ended = true
        endedFlag.store(true, ordering: .releasing)
        feed.queue = []
        feed.head = 0
        feed.subscriber = nil
        if let fanout {
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
