import EventLoops
import HTTPServer
import Reactive

/// One live channel: its history, its id counter, and the subjects its events go out through.
///
/// Publishing assigns each event the next sequence, appends it to the ``ChannelHistory``, makes it the value
/// of ``latest`` (a `CurrentValueSubject`) and sends it through ``events`` (a `PassthroughSubject`), all
/// under the channel's lock, so the subjects see events in id order. The subject's subscribers are not the
/// HTTP subscribers but one ``ChannelLoopFanout`` per event loop that has any: an event crosses to each loop
/// once, however many of its clients listen, and the fan-out hands it to each local
/// ``ChannelSubscription``.
///
/// Joining is atomic with publishing: under the same lock a subscriber gets the replay it asked for (the
/// history after its `Last-Event-ID`) and the sequence its live part starts after, so no event is both replayed
/// and delivered live, and none falls between the two.
///
/// **Ownership:** held by the ``ChannelBroker`` while it exists, and by its subscriptions.
///
/// **Thread safety:** safe from any thread (a lock); subscribing and leaving happen on the subscriber's loop.
final class Channel: @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched under `lock`.
    let name: String
    /// Every event, in id order; one subscriber per event loop with subscribers.
    let events = PassthroughSubject<ChannelEvent, Never>()
    /// The newest event.
    let latest = CurrentValueSubject<ChannelEvent?, Never>(nil)
    /// Whether this is a replica's copy of a channel whose history lives in Redis (``RedisChannelBroker``):
    /// events come in through ``apply(_:epoch:now:)`` rather than ``publish(_:now:)``, and a resume id ahead of
    /// the copy is one another replica delivered first, not a stranger.
    let mirrorsRedis: Bool
    /// A Redis copy's broker, told (after the channel's lock) whenever this replica's own presence on the channel
    /// (its subscriber count or its named clients) changed, so it writes it to Redis for the other replicas.
    private let localPresenceChanged: (@Sendable (Channel) -> Void)?
    private let maxSubscribers: Int
    private let lock = Lock()
    private var state: State

    private struct State {
        /// The history's epoch, in every id (the process's; for a Redis copy, the channel's generation there).
        var epoch: String
        var history: ChannelHistory
        var lastSequence: UInt64 = 0
        /// The sequence the channel counted from when it was made (its first event has the next one); 0 for a
        /// Redis copy, whose generations count from 1. Where ``Resume/fromStart`` starts.
        var originSequence: UInt64 = 0
        /// A Redis copy: whether the next event must follow ``lastSequence`` directly (false until the copy
        /// holds an event, and again after its history broke: then it starts from whatever comes).
        var followsOn = false
        var subscribers = 0
        var fanouts: [ObjectIdentifier: ChannelLoopFanout] = [:]
        /// The named subscribers (`?client=`), with how many subscriptions each has here.
        var clients: [String: Int] = [:]
        /// A Redis copy: the other replicas' presence on the channel, by replica id, as they announced it.
        var remote: [String: RemotePresence] = [:]
        /// Set once the broker dropped the channel; nothing joins or publishes after.
        var retired = false
    }

    /// Another replica's subscribers on a channel, as it announced them through Redis.
    struct RemotePresence: Equatable, Sendable {
        var count: Int
        var clients: Set<String>
        /// When this replica heard it (monotonic nanoseconds): a list of live replicas asked before then does not
        /// drop it.
        var heardAt: UInt64
    }

    /// Where a joining subscriber starts.
    enum Resume: Equatable, Sendable {
        /// Live events only (a first subscription).
        case live
        /// After the id the client last had (`Last-Event-ID`): the history's events after it, then live.
        case after(String)
        /// Every event the channel has had, as far as the history still holds them (`reset`
        /// `history-truncated` first when it no longer holds the first), then live: a channel a multi-channel
        /// subscription picks up after it began, or one its cursor says nothing of.
        case fromStart
        /// A resume point that cannot be read (a multi-channel cursor that is not one, or ambiguous for this
        /// channel): `reset` (`unknown-id`), the whole history, then live, as for an id that is not one.
        case unknown
    }

    /// What one subscriber gets when it joins.
    struct Join {
        /// The history's epoch when it joined (empty for a Redis copy of a channel that has no generation yet).
        let epoch: String
        /// Events (and a leading `reset` when the client missed some) to send before the live ones.
        let replay: [ChannelEvent]
        /// The live part starts after this sequence.
        let liveAfter: UInt64
        /// The fan-out of the subscriber's loop, to leave through.
        let fanout: ChannelLoopFanout
        /// The last live control frame made when it joined (under the lock, so none of this channel's since).
        let lastControlSerial: UInt64
    }

    /// Why a join or a publish did not happen.
    enum Refusal: Error {
        /// The channel has ``SpoutConfiguration/Channels/maxSubscribersPerChannel`` subscribers.
        case full
        /// The broker dropped the channel meanwhile; look it up again.
        case retired
    }

    /// `firstSequence`: the sequence the channel's ids count on from (its first event gets the next one); the
    /// broker passes one past every id an earlier channel of the same name may have given out.
    init(
        name: String,
        epoch: String,
        history: ChannelHistory.Limits,
        maxSubscribers: Int,
        firstSequence: UInt64 = 0,
        mirrorsRedis: Bool = false,
        localPresenceChanged: (@Sendable (Channel) -> Void)? = nil
    ) {
        self.name = name
        self.maxSubscribers = maxSubscribers
        self.mirrorsRedis = mirrorsRedis
        self.localPresenceChanged = localPresenceChanged
        self.state = State(
            epoch: epoch,
            history: ChannelHistory(limits: history),
            lastSequence: firstSequence,
            originSequence: firstSequence
        )
    }

    /// A fan-out of this channel's events on `loop`, paced for where they come from.
    func makeFanout(on loop: EventLoop) -> ChannelLoopFanout {
        ChannelLoopFanout(loop: loop, pacing: mirrorsRedis ? .redisCopy : .inProcess)
    }

    /// The sequence of the newest event published (the `firstSequence` it was created with before any).
    var lastSequence: UInt64 { lock.withLock { state.lastSequence } }

    // MARK: Publishing

    /// Appends `items` in order and sends them to every subscriber; returns their ids, or `nil` if the channel
    /// was retired (the caller publishes on the channel the broker has now).
    func publish(_ items: [ChannelPublication], now: UInt64) -> [String]? {
        lock.withLock {
            guard !state.retired else { return nil }
            state.history.expire(now: now)
            var ids: [String] = []
            ids.reserveCapacity(items.count)
            for item in items {
                state.lastSequence &+= 1
                let id = ChannelEventID(epoch: state.epoch, sequence: state.lastSequence)
                let event = ChannelEvent(id: id, type: item.type, data: item.data, publishedAt: now)
                state.history.append(event)
                ids.append(event.id)
                latest.send(event)
                events.send(event)
            }
            return ids
        }
    }

    // MARK: Following Redis (a replica's copy)

    /// One event as Redis holds it, for ``apply(_:epoch:now:)``.
    struct Stored {
        let sequence: UInt64
        let type: String?
        let data: [UInt8]
        /// Monotonic nanoseconds, derived from the time Redis stored it.
        let publishedAt: UInt64
    }

    /// What ``apply(_:epoch:now:)`` found.
    enum Continuity: Equatable {
        /// The events followed on (or repeated ones already held, which were skipped).
        case continuous
        /// Events between the copy's last and `events.first` are missing: the caller reads them from Redis (or
        /// calls ``breakHistory(reason:epoch:)`` when Redis no longer has them). Nothing was applied.
        case missing(after: UInt64)
    }

    /// Takes `events` (in sequence order, of the history named `epoch`) into this copy and sends them to its
    /// subscribers. A different epoch means the history in Redis was lost or started over: the copy restarts
    /// (its subscribers get `event: reset`, reason `unknown-id`, then the new events). Called in order, from one
    /// Redis connection's loop.
    @discardableResult
    func apply(_ events: [Stored], epoch: String, now: UInt64) -> Continuity {
        lock.withLock {
            if epoch != state.epoch {
                restart(epoch: epoch, reason: .unknownID)
            }
            state.history.expire(now: now)
            for stored in events where stored.sequence > state.lastSequence {
                if state.followsOn, stored.sequence != state.lastSequence &+ 1 {
                    return .missing(after: state.lastSequence)
                }
                state.followsOn = true
                state.lastSequence = stored.sequence
                let id = ChannelEventID(epoch: state.epoch, sequence: stored.sequence)
                let event = ChannelEvent(id: id, type: stored.type, data: stored.data, publishedAt: stored.publishedAt)
                state.history.append(event)
                latest.send(event)
                self.events.send(event)
            }
            return .continuous
        }
    }

    /// The copy's history can no longer follow on: Redis dropped events it missed (`historyTruncated`), or
    /// lost the channel (`unknownID`, `epoch` the new one or empty). Subscribers get `event: reset` and the
    /// copy starts over from what comes next.
    func breakHistory(reason: ChannelEvent.ResetReason, epoch: String) {
        lock.withLock { restart(epoch: epoch, reason: reason) }
    }

    /// The epoch and last sequence of the copy.
    var position: (epoch: String, sequence: UInt64) {
        lock.withLock { (state.epoch, state.lastSequence) }
    }

    /// Under the lock. A copy that never held an event starts quietly.
    private func restart(epoch: String, reason: ChannelEvent.ResetReason) {
        let hadEvents = state.lastSequence != 0 || !state.history.isEmpty
        let keepsSequence = reason == .historyTruncated && epoch == state.epoch
        state.epoch = epoch
        state.history = ChannelHistory(limits: state.history.limits)
        state.followsOn = false
        if !keepsSequence { state.lastSequence = 0 }
        if hadEvents {
            events.send(ChannelEvent.reset(reason: reason, oldest: nil, live: keepsSequence ? .gap : .restart))
        }
    }

    /// Retires a Redis copy nobody subscribes to (its history is only a cache of Redis's); see
    /// ``retireIfIdle(now:)``.
    func retireIfUnsubscribed() -> Bool {
        lock.withLock {
            guard state.subscribers == 0, !state.retired else { return false }
            state.retired = true
            return true
        }
    }

    /// Subscribers joined now.
    var subscriberCount: Int { lock.withLock { state.subscribers } }

    /// Who is here: the subscribers joined, and the names the named ones gave, sorted. Over Redis, this replica's
    /// own (the route adds the other replicas' from Redis).
    var presence: (count: Int, clients: [String]) {
        lock.withLock { (state.subscribers, state.clients.keys.sorted()) }
    }

    // MARK: Presence on other replicas (a Redis copy)

    /// Sets what replica `replica` announced of its presence here (`nil`: it has none), sending `join` / `leave`
    /// for the named clients that thereby arrive anywhere or are now gone everywhere, when `announce`.
    func updateRemotePresence(replica: String, to presence: RemotePresence?, announce: Bool) {
        changeRemote(announce: announce) { $0[replica] = presence }
    }

    /// Replaces every other replica's presence here with `entries` (a read of Redis), sending `join` / `leave` for
    /// the differences when `announce`.
    func replaceRemotePresence(_ entries: [String: RemotePresence], announce: Bool) {
        changeRemote(announce: announce) { $0 = entries }
    }

    /// Drops the presence of the replicas not in `live` that was heard before `heardBefore` (when the list was
    /// asked for): those replicas stopped refreshing their heartbeat in Redis, so their subscribers left.
    func dropRemoteReplicas(keeping live: Set<String>, heardBefore: UInt64) {
        changeRemote(announce: true) { remote in
            remote = remote.filter { live.contains($0.key) || $0.value.heardAt >= heardBefore }
        }
    }

    /// The other replicas' presence, as this copy holds it.
    var remotePresence: [String: RemotePresence] { lock.withLock { state.remote } }

    /// Applies `change` to the other replicas' presence under the lock; the named clients present anywhere before
    /// and after differ by those that joined and those that left, announced (sorted) when `announce`.
    private func changeRemote(announce: Bool, _ change: (inout [String: RemotePresence]) -> Void) {
        lock.withLock {
            let before = presentClients()
            change(&state.remote)
            guard announce else { return }
            let after = presentClients()
            for client in after.subtracting(before).sorted() {
                events.send(ChannelEvent.presence("join", channel: name, client: client))
            }
            for client in before.subtracting(after).sorted() {
                events.send(ChannelEvent.presence("leave", channel: name, client: client))
            }
        }
    }

    /// The named clients here or on another replica. Under the lock.
    private func presentClients() -> Set<String> {
        var clients = Set(state.clients.keys)
        for entry in state.remote.values { clients.formUnion(entry.clients) }
        return clients
    }

    /// Whether another replica has `client` here. Under the lock.
    private func isRemotelyPresent(_ client: String) -> Bool {
        state.remote.values.contains { $0.clients.contains(client) }
    }

    // MARK: Subscribing (on the subscriber's loop)

    /// Joins `subscription` on `loop`, resuming as `resume` says (after `Last-Event-ID`, from the start, or live).
    ///
    /// - From the start: the whole history, then live; `reset` (`history-truncated`) first when the history no
    ///   longer holds the channel's first event.
    /// - An id of this history whose successors are all held: those successors, then live.
    /// - An id older than the history: `reset` (`history-truncated`), the whole history, then live.
    /// - An id from an earlier run, one from the future, or not an id: `reset` (`unknown-id`), the whole
    ///   history, then live.
    func join(
        _ subscription: ChannelSubscription,
        on loop: EventLoop,
        resume: Resume,
        now: UInt64
    ) -> Result<Join, Refusal> {
        loop.preconditionInEventLoop()
        let joined: Result<Join, Refusal> = lock.withLock {
            guard !state.retired else { return .failure(.retired) }
            guard state.subscribers < maxSubscribers else { return .failure(.full) }
            state.history.expire(now: now)
            let (replay, ahead) = replay(resume)
            let key = ObjectIdentifier(loop)
            let fanout: ChannelLoopFanout
            if let existing = state.fanouts[key] {
                fanout = existing
            } else {
                fanout = makeFanout(on: loop)
                state.fanouts[key] = fanout
                events.subscribe(fanout)
            }
            fanout.add(subscription)
            state.subscribers &+= 1
            if let client = subscription.client {
                let held = state.clients[client] ?? 0
                state.clients[client] = held &+ 1
                // Before the join's control serial is read: the joining subscription does not get its own join.
                // A client another replica has here already joined.
                if held == 0, !isRemotelyPresent(client) {
                    events.send(ChannelEvent.presence("join", channel: name, client: client))
                }
            }
            return .success(
                Join(
                    epoch: state.epoch,
                    replay: replay,
                    liveAfter: ahead ?? state.lastSequence,
                    fanout: fanout,
                    lastControlSerial: ChannelEvent.lastControlSerial
                )
            )
        }
        if case .success = joined { localPresenceChanged?(self) }
        return joined
    }

    /// A subscription on `fanout`'s loop leaves.
    func leave(_ subscription: ChannelSubscription, from fanout: ChannelLoopFanout) {
        fanout.loop.preconditionInEventLoop()
        let (left, emptied): (Bool, ChannelLoopFanout?) = lock.withLock {
            guard fanout.remove(subscription) else { return (false, nil) }
            state.subscribers &-= 1
            if let client = subscription.client, let held = state.clients[client] {
                if held <= 1 {
                    state.clients[client] = nil
                    // Still here through another replica: not gone.
                    if !isRemotelyPresent(client) {
                        events.send(ChannelEvent.presence("leave", channel: name, client: client))
                    }
                } else {
                    state.clients[client] = held &- 1
                }
            }
            guard fanout.isEmpty, state.fanouts[ObjectIdentifier(fanout.loop)] === fanout else { return (true, nil) }
            state.fanouts[ObjectIdentifier(fanout.loop)] = nil
            return (true, fanout)
        }
        emptied?.detach()
        if left { localPresenceChanged?(self) }
    }

    /// The replay for a client resuming as `resume` says, and the sequence its live part starts after when
    /// that is not the channel's last (a Redis copy behind the client). Must be called under the lock.
    private func replay(_ resume: Resume) -> (events: [ChannelEvent], liveAfter: UInt64?) {
        let history = state.history
        let lastEventID: String
        switch resume {
        case .live:
            return ([], nil)
        case .after(let id):
            lastEventID = id
        case .unknown:
            return ([ChannelEvent.reset(reason: .unknownID, oldest: history.oldest?.id)] + history.all, nil)
        case .fromStart:
            // A Redis copy without a generation has had nothing yet.
            if mirrorsRedis, state.epoch.isEmpty { return ([], nil) }
            let complete =
                history.oldest.map { $0.sequence == state.originSequence &+ 1 }
                ?? (state.lastSequence == state.originSequence)
            if complete { return (history.all, nil) }
            return ([ChannelEvent.reset(reason: .historyTruncated, oldest: history.oldest?.id)] + history.all, nil)
        }
        let parsed = ChannelEventID(lastEventID).flatMap { $0.epoch == state.epoch ? $0 : nil }
        if mirrorsRedis, let parsed, parsed.sequence > state.lastSequence {
            // Delivered by another replica before this copy heard of it (the client moved here): everything up to
            // it is on its way here live, and the join's `liveAfter` skips it.
            return ([], parsed.sequence)
        }
        guard let id = parsed, id.sequence <= state.lastSequence else {
            return ([ChannelEvent.reset(reason: .unknownID, oldest: history.oldest?.id)] + history.all, nil)
        }
        if let after = history.events(after: id.sequence) {
            // Nothing newer was ever dropped: the held events after the id are all the client missed. (With an
            // empty history that is only true if the id is the last one.)
            if !history.isEmpty || id.sequence == state.lastSequence { return (after, nil) }
        }
        return ([ChannelEvent.reset(reason: .historyTruncated, oldest: history.oldest?.id)] + history.all, nil)
    }

    // MARK: Operators' view

    /// A snapshot for `GET /channels`.
    struct Summary {
        let name: String
        let subscribers: Int
        let lastID: String?
        let historyEvents: Int
        let historyBytes: Int
    }

    func summary(now: UInt64) -> Summary {
        lock.withLock {
            state.history.expire(now: now)
            return Summary(
                name: name,
                subscribers: state.subscribers,
                lastID: state.lastSequence == 0
                    ? nil : ChannelEventID(epoch: state.epoch, sequence: state.lastSequence).description,
                historyEvents: state.history.count,
                historyBytes: state.history.bytes
            )
        }
    }

    /// Expires old events and, when the channel has no subscriber and an empty history, retires it: it takes
    /// no more joins or publishes, and the broker forgets it. Returns whether it retired.
    func retireIfIdle(now: UInt64) -> Bool {
        lock.withLock {
            state.history.expire(now: now)
            guard state.subscribers == 0, state.history.isEmpty, !state.retired else { return false }
            state.retired = true
            return true
        }
    }
}
