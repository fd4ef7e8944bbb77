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
    }

    /// What happens to a subscriber past its bound (`channels.overflow`).
    enum Overflow: String, Sendable {
        case disconnect
        case dropOldest = "drop-oldest"
    }

    let loop: EventLoop
    let channel: Channel
    private let limits: Limits
    private let metrics: ChannelMetrics
    /// Whether the stream is SSE (else NDJSON): which encoding's size counts against the byte bound.
    private let usesSSE: Bool
    // The loop-confined state below is `@exclusivity(unchecked)`, as in `Connection`: the loop's serial queue
    // rules out overlapping access, every access here is instantaneous (none is held across a call out to the
    // subscriber, so a re-entrant `request` cannot overlap one), and the dynamic checks, a runtime call each,
    // were about 4 % of a fan-out's CPU (`perf` over `fanout -subs 1000`).

    /// The position in the fan-out's list, kept by the fan-out. // Loop-confined.
    @exclusivity(unchecked) var fanoutIndex = -1

    @exclusivity(unchecked) private var subscriber: (any Subscriber<ChannelEvent, ChannelStreamEnd>)?
    @exclusivity(unchecked) private var fanout: ChannelLoopFanout?
    /// Waiting events, oldest first from `head`: the replay's, then live ones.
    @exclusivity(unchecked) private var queue: [ChannelEvent] = []
    @exclusivity(unchecked) private var head = 0
    @exclusivity(unchecked) private var replayWaiting = 0
    @exclusivity(unchecked) private var liveWaiting = 0
    @exclusivity(unchecked) private var liveWaitingBytes = 0
    /// Live events up to this sequence were replayed, published before the subscription joined, or delivered.
    @exclusivity(unchecked) private var liveAfter: UInt64 = 0
    /// The serial of the last live control frame taken, or the last made before the subscription joined.
    @exclusivity(unchecked) private var lastLiveControl: UInt64 = 0
    @exclusivity(unchecked) private var demand = 0
    /// Events dropped (`dropOldest`) since the last delivery.
    @exclusivity(unchecked) private var missed = 0
    @exclusivity(unchecked) private var lastDeliveredID: String?
    @exclusivity(unchecked) private var draining = false
    @exclusivity(unchecked) private var ended = false
    /// Where the channel was when the subscription joined: its epoch and the sequence the live part starts
    /// after (nil until it joins). Loop-confined.
    private(set) var joinedAt: (epoch: String, sequence: UInt64)?
    /// ``ended``, readable from any thread.
    private let endedFlag = Atomic<Bool>(false)

    init(loop: EventLoop, channel: Channel, limits: Limits, usesSSE: Bool, metrics: ChannelMetrics) {
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
        guard !ended else { return nil }
        switch channel.join(self, on: loop, resume: resume, now: now) {
        case .failure(let refusal):
            return refusal
        case .success(let join):
            fanout = join.fanout
            joinedAt = (join.epoch, join.liveAfter)
            liveAfter = join.liveAfter
            lastLiveControl = join.lastControlSerial
            queue = join.replay
            replayWaiting = join.replay.count
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
        guard !ended else { return }
        self.subscriber = subscriber
        subscriber.receive(subscription: self)
    }

    /// Whether the subscription has ended (the client left, or the channel ended it); from any thread.
    var hasEnded: Bool { endedFlag.load(ordering: .acquiring) }

    // MARK: Subscription (the bridge, on the loop)

    func request(_ more: Subscribers.Demand) {
        loop.preconditionInEventLoop()
        guard !ended else { return }
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
                guard event.controlSerial > lastLiveControl else { continue }
                lastLiveControl = event.controlSerial
                if live == .restart { liveAfter = 0 }
            } else {
                guard event.sequence > liveAfter else { continue }
                liveAfter = event.sequence
            }
            guard !ended else { return }
            queue.append(event)
            liveWaiting &+= 1
            liveWaitingBytes &+= size(of: event)
            drain()
            if liveWaiting > limits.events || liveWaitingBytes > limits.bytes { overflowed() }
        }
    }

    // MARK: Internals

    private func size(of event: ChannelEvent) -> Int {
        usesSSE ? event.sse.count : event.ndjson.count
    }

    private func addDemand(_ more: Subscribers.Demand) {
        if let count = more.max {
            demand = demand.addingReportingOverflow(count).overflow ? Int.max : demand &+ count
        } else {
            demand = Int.max
        }
    }

    /// Sends waiting events while there is demand. Re-entrant calls (the bridge asking for more from inside a
    /// delivery) only add demand; the outer loop goes on.
    private func drain() {
        guard !draining, !ended else { return }
        draining = true
        defer { draining = false }
        var delivered = 0
        while demand > 0, !ended {
            let next: ChannelEvent
            if missed > 0 {
                next = ChannelEvent.gap(missed: missed, after: lastDeliveredID)
                missed = 0
            } else if let event = popOldest() {
                next = event
            } else {
                break
            }
            if demand != Int.max { demand &-= 1 }
            if !next.isControl {
                lastDeliveredID = next.id
                delivered &+= 1
            }
            if let subscriber { addDemand(subscriber.receive(next)) }
        }
        if delivered > 0 { metrics.delivered.increment(by: delivered) }
    }

    private func popOldest() -> ChannelEvent? {
        guard head < queue.count else { return nil }
        let event = queue[head]
        head &+= 1
        if replayWaiting > 0 {
            replayWaiting &-= 1
        } else {
            liveWaiting &-= 1
            liveWaitingBytes &-= size(of: event)
        }
        if head == queue.count {
            queue.removeAll(keepingCapacity: queue.capacity <= 16)
            head = 0
        } else if head >= 32, head &* 2 >= queue.count {
            queue.removeFirst(head)
            head = 0
        }
        return event
    }

    private func overflowed() {
        switch limits.overflow {
        case .disconnect:
            metrics.overflowDisconnects.increment()
            let subscriber = subscriber
            end()
            subscriber?.receive(completion: .failure(.overflow))
        case .dropOldest:
            while liveWaiting > limits.events || liveWaitingBytes > limits.bytes, popOldest() != nil {
                missed &+= 1
                metrics.dropped.increment()
            }
        }
    }

    /// Leaves the channel and lets go of everything; once.
    private func end() {
        guard !ended else { return }
        ended = true
        endedFlag.store(true, ordering: .releasing)
        queue = []
        head = 0
        subscriber = nil
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
