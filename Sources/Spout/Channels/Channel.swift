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
    private let epoch: String
    private let maxSubscribers: Int
    private let lock = Lock()
    private var state: State

    private struct State {
        var history: ChannelHistory
        var lastSequence: UInt64 = 0
        var subscribers = 0
        var fanouts: [ObjectIdentifier: ChannelLoopFanout] = [:]
        /// Set once the broker dropped the channel; nothing joins or publishes after.
        var retired = false
    }

    /// What one subscriber gets when it joins.
    struct Join {
        /// Events (and a leading `reset` when the client missed some) to send before the live ones.
        let replay: [ChannelEvent]
        /// The live part starts after this sequence.
        let liveAfter: UInt64
        /// The fan-out of the subscriber's loop, to leave through.
        let fanout: ChannelLoopFanout
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
    init(name: String, epoch: String, history: ChannelHistory.Limits, maxSubscribers: Int, firstSequence: UInt64 = 0) {
        self.name = name
        self.epoch = epoch
        self.maxSubscribers = maxSubscribers
        self.state = State(history: ChannelHistory(limits: history), lastSequence: firstSequence)
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
                let id = ChannelEventID(epoch: epoch, sequence: state.lastSequence)
                let event = ChannelEvent(id: id, type: item.type, data: item.data, publishedAt: now)
                state.history.append(event)
                ids.append(event.id)
                latest.send(event)
                events.send(event)
            }
            return ids
        }
    }

    // MARK: Subscribing (on the subscriber's loop)

    /// Joins `subscription` on `loop`, resuming after `lastEventID` (the client's `Last-Event-ID`) when given.
    ///
    /// - An id of this history whose successors are all held: those successors, then live.
    /// - An id older than the history: `reset` (`history-truncated`), the whole history, then live.
    /// - An id from an earlier run, one from the future, or not an id: `reset` (`unknown-id`), the whole
    ///   history, then live.
    func join(
        _ subscription: ChannelSubscription,
        on loop: EventLoop,
        after lastEventID: String?,
        now: UInt64
    ) -> Result<Join, Refusal> {
        loop.preconditionInEventLoop()
        return lock.withLock {
            guard !state.retired else { return .failure(.retired) }
            guard state.subscribers < maxSubscribers else { return .failure(.full) }
            state.history.expire(now: now)
            let replay = replay(after: lastEventID)
            let key = ObjectIdentifier(loop)
            let fanout: ChannelLoopFanout
            if let existing = state.fanouts[key] {
                fanout = existing
            } else {
                fanout = ChannelLoopFanout(loop: loop)
                state.fanouts[key] = fanout
                events.subscribe(fanout)
            }
            fanout.add(subscription)
            state.subscribers &+= 1
            return .success(Join(replay: replay, liveAfter: state.lastSequence, fanout: fanout))
        }
    }

    /// A subscription on `fanout`'s loop leaves.
    func leave(_ subscription: ChannelSubscription, from fanout: ChannelLoopFanout) {
        fanout.loop.preconditionInEventLoop()
        let emptied: ChannelLoopFanout? = lock.withLock {
            guard fanout.remove(subscription) else { return nil }
            state.subscribers &-= 1
            guard fanout.isEmpty, state.fanouts[ObjectIdentifier(fanout.loop)] === fanout else { return nil }
            state.fanouts[ObjectIdentifier(fanout.loop)] = nil
            return fanout
        }
        emptied?.detach()
    }

    /// Must be called under the lock.
    private func replay(after lastEventID: String?) -> [ChannelEvent] {
        guard let lastEventID else { return [] }
        let history = state.history
        guard let id = ChannelEventID(lastEventID), id.epoch == epoch, id.sequence <= state.lastSequence else {
            return [ChannelEvent.reset(reason: .unknownID, oldest: history.oldest?.id)] + history.all
        }
        if let after = history.events(after: id.sequence) {
            // Nothing newer was ever dropped: the held events after the id are all the client missed. (With an
            // empty history that is only true if the id is the last one.)
            if !history.isEmpty || id.sequence == state.lastSequence { return after }
        }
        return [ChannelEvent.reset(reason: .historyTruncated, oldest: history.oldest?.id)] + history.all
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
                    ? nil : ChannelEventID(epoch: epoch, sequence: state.lastSequence).description,
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

/// One event as a publisher gave it: its optional type and its data as compact JSON.
///
/// **Thread safety:** value type.
struct ChannelPublication: Sendable, Equatable {
    var type: String?
    var data: [UInt8]
}
