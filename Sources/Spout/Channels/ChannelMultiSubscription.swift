import EventLoops
import HTTPServer
import Reactive

/// A channel's name as a multi-channel stream writes it: the name, and its JSON string (quoted, escaped) made
/// once for every frame of the channel.
///
/// **Thread safety:** immutable; shared freely.
final class ChannelTag: Sendable {
    let name: String
    /// `"<name>"`, as JSON.
    let json: [UInt8]
    /// The channel's key in a cursor (``ChannelCursor/key(of:)``).
    let key: UInt64

    init(_ name: String) {
        self.name = name
        var json: [UInt8] = []
        JSONText.appendString(name, to: &json)
        self.json = json
        self.key = ChannelCursor.key(of: name)
    }
}

/// One frame of a multi-channel stream (`GET /subscribe`), as ``ChannelMultiSSEEncoder`` and
/// ``ChannelMultiNDJSONEncoder`` write it.
///
/// **Thread safety:** immutable values.
enum ChannelStreamItem {
    /// An event of `channel`, with the subscription's cursor after it.
    case event(ChannelEvent, channel: ChannelTag, cursor: [UInt8])
    /// A control frame (`reset`, `gap`) of `channel`.
    case control(ChannelEvent, channel: ChannelTag)
}

/// Many channels on one stream: a ``ChannelSubscription`` per channel (a *leg*: its replay, its bound, its
/// overflow policy, exactly as on `GET /channels/{name}`), merged into one sequence of ``ChannelStreamItem``s,
/// each event carrying the subscription's cursor (``ChannelCursor``) after it.
///
/// **Demand.** Each leg is asked for one event at a time, and asked for the next only once its event went out to
/// the stream, so at most one event per leg waits here (the others wait in their leg, bounded there) and the legs
/// take turns: a busy channel does not starve a quiet one. The stream's demand (the ``DemandBridge``, asking as
/// the socket drains) decides when.
///
/// **Patterns.** A pattern (`news.*`) follows every channel whose name starts with its prefix: those that exist
/// when the subscription starts, and each one created later (the broker calls ``picked(_:)``), which joins from its
/// start so that the events published as it was created are not missed. Channels followed are bounded by
/// ``maxLegs``; a match beyond that, or one the subscriber may not follow (``mayFollow``), is not followed.
///
/// **Ownership:** created by the route; held by its bridge (as its subscription), by its legs' subscriber links
/// while it lives, and by the broker's pattern watch until it ends.
///
/// **Thread safety:** confined to its loop: the legs, the bridge and the pattern picks call it there.
final class ChannelMultiSubscription: Subscription, @unchecked Sendable {
    // @unchecked Sendable: all mutable state is confined to `loop`.

    /// One channel of the subscription, and the link from its ``ChannelSubscription`` to here.
    final class Leg: Subscriber, @unchecked Sendable {
        // @unchecked Sendable: confined to the owner's loop.
        typealias Input = ChannelEvent
        typealias Failure = ChannelStreamEnd

        let tag: ChannelTag
        /// The leg's place in the subscription's order (legs are only appended): its channel in the cursor text.
        let index: Int
        /// The leg's feed; released when the subscription ends.
        var upstream: ChannelSubscription?
        /// The last event delivered (or where the channel was when the leg joined live, or what the client's
        /// cursor said until the leg delivers): nil when the client has nothing of this channel (after a reset,
        /// or a Redis channel without a generation yet).
        var position: ChannelCursor.Position?
        /// Whether the position is the one the leg joined at rather than one the client was given or gave: taken
        /// from the leg's ``ChannelSubscription/joinedAt`` once it joined.
        var positionFromJoin: Bool
        private var owner: ChannelMultiSubscription?

        init(
            tag: ChannelTag,
            index: Int,
            owner: ChannelMultiSubscription,
            position: ChannelCursor.Position?,
            fromJoin: Bool
        ) {
            self.tag = tag
            self.index = index
            self.owner = owner
            self.position = position
            self.positionFromJoin = fromJoin
        }

        func receive(subscription: any Subscription) {
            subscription.request(.max(1))
        }

        func receive(_ event: ChannelEvent) -> Subscribers.Demand {
            owner?.take(event, from: self)
            return .none
        }

        func receive(completion: Subscribers.Completion<ChannelStreamEnd>) {
            owner?.legEnded(completion)
        }

        /// Lets go of the owner and the feed (the subscription ended).
        func release() -> ChannelSubscription? {
            owner = nil
            defer { upstream = nil }
            return upstream
        }
    }

    let loop: EventLoop
    /// The most channels followed at once.
    let maxLegs: Int
    /// Whether the subscriber may follow a channel (``ChannelSubscriberRights/mayFollow(_:)``).
    let mayFollow: @Sendable (String) -> Bool
    private var legs: [Leg] = []
    private var legByName: [String: Leg] = [:]
    /// The cursor as last written, rewritten in place as legs move (``ChannelCursorText``).
    private var cursorText = ChannelCursorText()
    /// Whether a leg still takes its position from its join (``Leg/positionFromJoin``), which it learns once it
    /// joined: then each cursor looks whether it has.
    private var joinPositionsPending = false
    /// Events taken from legs and not yet sent, oldest first from `readyHead` (at most one per leg).
    private var ready: [(leg: Leg, event: ChannelEvent)] = []
    private var readyHead = 0
    private var subscriber: (any Subscriber<ChannelStreamItem, ChannelStreamEnd>)?
    private var demand = 0
    private var draining = false
    private var ended = false
    /// What to call once the subscription ends (the broker's pattern watch to remove).
    private var onEnd: [() -> Void] = []

    init(loop: EventLoop, maxLegs: Int, mayFollow: @escaping @Sendable (String) -> Bool) {
        self.loop = loop
        self.maxLegs = maxLegs
        self.mayFollow = mayFollow
    }

    /// The channels followed, in the order they were added.
    var channelNames: [String] { legs.map(\.tag.name) }

    /// Whether the subscription follows `name` already.
    func follows(_ name: String) -> Bool { legByName[name] != nil }

    /// Whether another channel may be followed.
    var hasRoom: Bool { legs.count < maxLegs }

    /// Adds the leg of channel `name`: `join` builds and joins its ``ChannelSubscription`` (nil when it could
    /// not), given the link that will receive its events. `position` is where the client is in it (from its
    /// cursor), or nil to take the position the leg joins at. Returns whether it was added.
    @discardableResult
    func addLeg(
        _ name: String,
        position: ChannelCursor.Position?,
        fromJoin: Bool,
        join: (Leg) -> ChannelSubscription?
    ) -> Bool {
        loop.preconditionInEventLoop()
        guard !ended, legByName[name] == nil, legs.count < maxLegs else { return false }
        let leg = Leg(tag: ChannelTag(name), index: legs.count, owner: self, position: position, fromJoin: fromJoin)
        guard let upstream = join(leg) else {
            _ = leg.release()
            return false
        }
        leg.upstream = upstream
        legs.append(leg)
        legByName[name] = leg
        cursorText.invalidate()
        upstream.start(leg)
        return true
    }

    /// Runs `action` when the subscription ends (at once if it has).
    func whenEnded(_ action: @escaping () -> Void) {
        loop.preconditionInEventLoop()
        if ended { action() } else { onEnd.append(action) }
    }

    /// Hands the subscription to `subscriber` (the stream's bridge).
    func start(_ subscriber: some Subscriber<ChannelStreamItem, ChannelStreamEnd>) {
        loop.preconditionInEventLoop()
        guard !ended else { return }
        self.subscriber = subscriber
        subscriber.receive(subscription: self)
    }

    /// The cursor now: every leg's position, in the legs' order. Kept written between events (the leg that
    /// moved is rewritten in place, see ``ChannelCursorText``): a 50-channel cursor written whole for every event
    /// was most of such a stream's cost (bench/README.md, "Channels at scale").
    func cursor() -> [UInt8] {
        if joinPositionsPending {
            // A leg that joined since the last cursor takes the position it joined at.
            for leg in legs where leg.positionFromJoin && takeJoinPosition(of: leg) {
                cursorText.invalidate()
            }
        }
        return cursorText.text {
            var pending = false
            let positions = legs.map { leg in
                _ = takeJoinPosition(of: leg)
                pending = pending || leg.positionFromJoin
                return (key: leg.tag.key, position: leg.position)
            }
            joinPositionsPending = pending
            return positions
        }
    }

    /// Gives a leg that takes its position from its join the one it joined at, once it joined; whether it had.
    private func takeJoinPosition(of leg: Leg) -> Bool {
        guard leg.positionFromJoin, let joined = leg.upstream?.joinedAt else { return false }
        leg.positionFromJoin = false
        leg.position =
            joined.epoch.isEmpty ? nil : ChannelCursor.Position(epoch: joined.epoch, sequence: joined.sequence)
        return true
    }

    // MARK: Subscription (the bridge, on the loop)

    func request(_ more: Subscribers.Demand) {
        loop.preconditionInEventLoop()
        guard !ended else { return }
        if let count = more.max {
            demand = demand.addingReportingOverflow(count).overflow ? Int.max : demand &+ count
        } else {
            demand = Int.max
        }
        drain()
    }

    func cancel() {
        guard loop.inEventLoop else {
            loop.execute { [self] in cancel() }
            return
        }
        end()
    }

    // MARK: The legs (on the loop)

    private func take(_ event: ChannelEvent, from leg: Leg) {
        guard !ended else { return }
        ready.append((leg, event))
        drain()
    }

    private func legEnded(_ completion: Subscribers.Completion<ChannelStreamEnd>) {
        guard !ended else { return }
        let subscriber = subscriber
        end()
        // A leg fell past its bound under `disconnect`: the whole stream ends, and resumes from its cursor.
        subscriber?.receive(completion: completion)
    }

    /// Sends ready events while there is demand; re-entrant calls only add to what is ready.
    private func drain() {
        guard !draining, !ended else { return }
        draining = true
        defer { draining = false }
        while demand > 0, !ended, readyHead < ready.count {
            let (leg, event) = ready[readyHead]
            readyHead &+= 1
            if readyHead == ready.count {
                ready.removeAll(keepingCapacity: true)
                readyHead = 0
            }
            if demand != Int.max { demand &-= 1 }
            let item: ChannelStreamItem
            if event.isControl {
                // A reset: what the client had of this channel no longer counts; a gap changes nothing (the
                // history may still hold what was dropped, and a resume gets it).
                if event.eventType == "reset" {
                    leg.positionFromJoin = false
                    leg.position = nil
                    cursorText.invalidate()
                }
                item = .control(event, channel: leg.tag)
            } else {
                let position = ChannelCursor.Position(epoch: Self.epoch(of: event.id), sequence: event.sequence)
                if leg.positionFromJoin {
                    leg.positionFromJoin = false
                    cursorText.invalidate()
                }
                leg.position = position
                cursorText.moved(leg.index, to: position)
                item = .event(event, channel: leg.tag, cursor: cursor())
            }
            if let subscriber {
                let more = subscriber.receive(item)
                if let count = more.max {
                    demand = demand.addingReportingOverflow(count).overflow ? Int.max : demand &+ count
                } else {
                    demand = Int.max
                }
            }
            // The leg's next event, now that this one went out.
            leg.upstream?.request(.max(1))
        }
    }

    /// The epoch of an id `<epoch>-<sequence>`.
    static func epoch(of id: String) -> String {
        let bytes = id.utf8
        guard let dash = bytes.lastIndex(of: UInt8(ascii: "-")) else { return "" }
        return String(id[..<dash])
    }

    /// Leaves every channel and lets go of everything; once.
    private func end() {
        guard !ended else { return }
        ended = true
        subscriber = nil
        ready = []
        readyHead = 0
        let all = legs
        legs = []
        legByName = [:]
        for leg in all { leg.release()?.cancel() }
        let actions = onEnd
        onEnd = []
        for action in actions { action() }
    }
}
