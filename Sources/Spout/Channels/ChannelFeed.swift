import Reactive

/// One subscriber's feed from a channel as a machine (``ChannelSubscription`` is its shell): the replay and the
/// live events waiting for the subscriber's demand, bounded, with the `event: gap` owed after drops. Each input
/// (the join, an event from the fan-out, demand from the bridge, the end) is a mutating method that returns what
/// the shell must do: hand events to the subscriber in order, count them in the metrics, end the stream for
/// overflow, leave the channel. Pure: no subscriber, no metrics, no channel, no loop; tested on its own.
///
/// - *Filtering* (``offer(_:)``): a live event is taken once, after the sequence the subscriber already has
///   (replayed, published before the join, or taken in an earlier pass of the fan-out); a live control frame once,
///   after the last serial taken (or made before the join); `restart` starts the sequences over; presence frames
///   only when asked for.
/// - *Waiting*: the replay first, then live events; only the live ones count against ``Limits/events`` and
///   ``Limits/bytes`` (the history holds the replay anyway). With ``Limits/conflate`` a live event replaces the
///   waiting one of its `event` type.
/// - *Delivery* (``beginDrain()``, ``nextDelivery()``, ``endDrain()``): one event per unit of demand, the owed
///   `event: gap` first.
/// - *Bound* (``enforceBound()``): past it, `disconnect` ends the feed; `dropOldest` drops the oldest waiting
///   events and owes a gap counting them.
/// - *Ended* (``end()``, or a `disconnect` overflow): nothing waits and nothing more is delivered or taken.
///
/// **Thread safety:** value type; its shell keeps it confined to its loop.
struct ChannelFeed {
    /// What ``offer(_:)`` did with an event.
    enum Offer: Equatable {
        /// Not for this subscriber (already taken, or a presence frame it did not ask for): nothing to do.
        case skipped
        /// Waiting now: drain, then ``enforceBound()``. `conflated`: it replaced a waiting event of its type
        /// (one dropped event to count).
        case queued(conflated: Bool)
        /// The feed has ended: stop handing it events.
        case ended
    }

    /// What ``enforceBound()`` found.
    enum Bound: Equatable {
        /// Within the bound.
        case within
        /// `dropOldest`: this many waiting events were dropped (counted in the next gap).
        case dropped(Int)
        /// `disconnect`: the feed has ended; end the stream with the overflow, and leave the channel if `leave`.
        case disconnect(leave: Bool)
    }

    /// What ``end()`` found.
    enum End: Equatable {
        /// It had ended already: nothing to do.
        case alreadyEnded
        /// It ends now; leave the channel if `leave` (it had joined).
        case ended(leave: Bool)
    }

    private let limits: ChannelSubscription.Limits
    /// Whether the stream is SSE (else NDJSON): which encoding's size counts against the byte bound.
    private let usesSSE: Bool
    /// Whether the subscriber asked for presence events.
    private let wantsPresence: Bool

    /// Waiting events, oldest first from `head`: the replay's, then live ones.
    private var queue: [ChannelEvent] = []
    private var head = 0
    /// Replayed events waiting (the first ones from `head`).
    private(set) var replayWaiting = 0
    /// Live events waiting, and their bytes in the stream's encoding: what the bound applies to.
    private(set) var liveWaiting = 0
    private(set) var liveWaitingBytes = 0
    /// Live events up to this sequence were replayed, published before the subscription joined, or taken.
    private(set) var liveAfter: UInt64 = 0
    /// The serial of the last live control frame taken, or the last made before the subscription joined.
    private(set) var lastLiveControl: UInt64 = 0
    /// Events the subscriber asked for and has not had (`Int.max`: unlimited).
    private(set) var demand = 0
    /// Events dropped (`dropOldest`, conflation) since the last delivery: the next one is a gap counting them.
    private(set) var missed = 0
    /// The id of the last channel event delivered: a gap's `after`.
    private(set) var lastDeliveredID: String?
    /// A drain is under way: the subscriber is being handed events, and may ask for more (or end the feed) from
    /// inside; a nested drain would deliver out of order, so ``beginDrain()`` refuses it and the demand it adds is
    /// taken by the outer drain's next ``nextDelivery()``.
    private(set) var draining = false
    /// Channel events delivered in the drain under way (control frames are not counted).
    private var deliveredInDrain = 0
    private(set) var joined = false
    private(set) var hasEnded = false

    init(limits: ChannelSubscription.Limits, usesSSE: Bool, wantsPresence: Bool) {
        self.limits = limits
        self.usesSSE = usesSSE
        self.wantsPresence = wantsPresence
    }

    /// Events waiting (replayed and live).
    var waiting: Int { queue.count &- head }

    /// The subscription joined: `replay` waits first; live events are taken after sequence `liveAfter` and control
    /// serial `lastControlSerial`. Returns the number of channel events replayed (for the metrics). Drain after.
    mutating func join(replay: [ChannelEvent], liveAfter: UInt64, lastControlSerial: UInt64) -> Int {
        guard !hasEnded else { return 0 }
        joined = true
        self.liveAfter = liveAfter
        lastLiveControl = lastControlSerial
        queue = replay
        head = 0
        replayWaiting = replay.count
        var replayed = 0
        for event in replay where !event.isControl { replayed &+= 1 }
        return replayed
    }

    /// The subscriber asks for `more` (saturating at unlimited). Drain after, unless a drain is under way.
    mutating func addDemand(_ more: Subscribers.Demand) {
        guard !hasEnded else { return }
        if let count = more.max {
            demand = demand.addingReportingOverflow(count).overflow ? Int.max : demand &+ count
        } else {
            demand = Int.max
        }
    }

    /// A live event from the fan-out, in order (see the type's *Filtering*).
    mutating func offer(_ event: ChannelEvent) -> Offer {
        if let live = event.live {
            guard event.controlSerial > lastLiveControl else { return .skipped }
            lastLiveControl = event.controlSerial
            if live == .restart { liveAfter = 0 }
            if live == .presence, !wantsPresence { return .skipped }
        } else {
            guard event.sequence > liveAfter else { return .skipped }
            liveAfter = event.sequence
        }
        guard !hasEnded else { return .ended }
        let conflated = limits.conflate && !event.isControl && liveWaiting > 0 && conflate(with: event)
        queue.append(event)
        liveWaiting &+= 1
        liveWaitingBytes &+= size(of: event)
        return .queued(conflated: conflated)
    }

    /// Starts handing events to the subscriber; false when a drain is under way (a re-entrant call from inside
    /// the subscriber: the outer drain goes on with the demand added) or the feed has ended. On true, call
    /// ``nextDelivery()`` until nil, then ``endDrain()``.
    mutating func beginDrain() -> Bool {
        guard !draining, !hasEnded else { return false }
        draining = true
        deliveredInDrain = 0
        return true
    }

    /// The next event to hand to the subscriber, taking one unit of demand: the gap owed, else the oldest waiting;
    /// nil when there is no demand, nothing waits, or the feed has ended.
    mutating func nextDelivery() -> ChannelEvent? {
        guard demand > 0, !hasEnded else { return nil }
        let next: ChannelEvent
        if missed > 0 {
            next = ChannelEvent.gap(missed: missed, after: lastDeliveredID)
            missed = 0
        } else if let event = popOldest() {
            next = event
        } else {
            return nil
        }
        if demand != Int.max { demand &-= 1 }
        if !next.isControl {
            lastDeliveredID = next.id
            deliveredInDrain &+= 1
        }
        return next
    }

    /// Ends the drain begun by ``beginDrain()``; returns the channel events it delivered (for the metrics).
    mutating func endDrain() -> Int {
        draining = false
        return deliveredInDrain
    }

    /// Applies the bound to the live events waiting (after an ``offer(_:)`` and the drain that follows it).
    mutating func enforceBound() -> Bound {
        guard liveWaiting > limits.events || liveWaitingBytes > limits.bytes else { return .within }
        switch limits.overflow {
        case .disconnect:
            guard case .ended(let leave) = end() else { return .within }
            return .disconnect(leave: leave)
        case .dropOldest:
            var dropped = 0
            while liveWaiting > limits.events || liveWaitingBytes > limits.bytes, popOldest() != nil {
                missed &+= 1
                dropped &+= 1
            }
            return .dropped(dropped)
        }
    }

    /// Ends the feed (the client left, the channel ended it, or overflow): lets go of what waits; once.
    mutating func end() -> End {
        guard !hasEnded else { return .alreadyEnded }
        hasEnded = true
        queue = []
        head = 0
        replayWaiting = 0
        liveWaiting = 0
        liveWaitingBytes = 0
        demand = 0
        missed = 0
        return .ended(leave: joined)
    }

    // MARK: Internals

    private func size(of event: ChannelEvent) -> Int {
        usesSSE ? event.sse.count : event.ndjson.count
    }

    private mutating func popOldest() -> ChannelEvent? {
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

    /// Drops the waiting live event of `event`'s type, if any (at most one waits per type, so the scan is short):
    /// `event` takes its place at the end, and the next delivery is preceded by `event: gap` counting it. Returns
    /// whether one was dropped.
    private mutating func conflate(with event: ChannelEvent) -> Bool {
        let firstLive = head &+ replayWaiting
        var index = queue.count &- 1
        while index >= firstLive {
            let waiting = queue[index]
            if !waiting.isControl, waiting.eventType == event.eventType {
                queue.remove(at: index)
                liveWaiting &-= 1
                liveWaitingBytes &-= size(of: waiting)
                missed &+= 1
                return true
            }
            index &-= 1
        }
        return false
    }
}
