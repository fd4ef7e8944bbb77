import Dispatch
import EventLoops
import Foundation
import HTTPServer
import OpenSSL
import RESP
import Reactive
import Redis

/// Channels shared across replicas through Redis (`channels.redisURL`): the history and the ids live in Redis
/// (see ``RedisChannelStore``), and each replica keeps, for every channel it has subscribers on, a *copy*: an
/// ordinary ``Channel`` fed from Redis instead of from local publishes. Fan-out inside the process is the
/// in-process one (the copy's subjects, one ``ChannelLoopFanout`` per loop), so a replica holds a fixed number of
/// Redis connections however many HTTP subscribers it serves:
///
/// - one *publisher* connection per event loop, on that loop: the publish script, `/latest`, `GET /channels`.
///   A request's command is written and its reply read on the loop the request arrived on, so a publish crosses
///   no thread (a busy fan-out on other threads does not stand between the client and its `202`);
/// - ``followerCount`` *follower* connections, spread over the same event loops: pub/sub for the copies (a
///   channel is on one, by its name's hash), and the reads that load a copy and repair it (in pieces of at most
///   ``readCount(_:)`` events, so a load never holds a loop long). They share the HTTP loops rather than run
///   on a loop of their own: a thread more per replica competed for the cores with the loops and with Redis,
///   and measured slower (docs/ARCHITECTURE.md, "Over Redis").
///
/// **A copy's life.** The first subscriber on a replica creates it *unsynced*: the follower subscribes to the
/// channel's announcements and, on the same connection (so in order with them), reads the history. Subscribers
/// arriving meanwhile open their stream at once (heartbeats flow) and join when the copy is live, each getting
/// its replay from the loaded history exactly as in-process. Announcements arriving before the load completes
/// are held and applied after it; those the load already covered are skipped by sequence. A live copy applies
/// announcements as they come; one that does not follow on from the copy's last sequence (a lost message)
/// makes the copy read what it missed. When a follower reconnects after Redis was unreachable, every copy on it
/// reads what it missed: no gap while Redis's history covers it, else `event: reset` (`history-truncated`); a
/// Redis that lost the channel gives `reset` (`unknown-id`) and the copy starts over. A copy without subscribers
/// for ``idleGraceSeconds`` is dropped and its announcements unsubscribed.
///
/// **Presence across replicas.** Each replica has a random id and refreshes a heartbeat in Redis every second;
/// it writes its own subscribers on each channel (count and named clients) to Redis when they change, announcing
/// the change on a pub/sub channel that every replica follows, so a copy's `join` / `leave` frames and
/// `GET /channels/{name}/presence` cover every replica (``RedisChannelStore`` presence keys). A replica whose
/// heartbeat lapses (``SpoutConfiguration/Channels/replicaTimeoutSeconds``) is gone: the others' next heartbeat
/// reply no longer lists it, and its subscribers leave.
///
/// **Ownership:** created once by ``ChannelService``; ``stop()`` closes the connections.
///
/// **Thread safety:** safe from any thread: the copies' table under `lock` (taken before a channel's own lock,
/// never after); a copy's events are applied on its follower's loop only.
final class RedisChannelBroker: @unchecked Sendable {
    // @unchecked Sendable: `copies`, `sweep`, `cancellables` and each Copy's state are only touched under `lock`.
    let configuration: SpoutConfiguration.Channels
    let metrics: ChannelMetrics
    let store: RedisChannelStore
    /// Publishing and the operators' reads: one per event loop, by loop.
    let publishers: [RedisConnection]
    private let publisherByLoop: [ObjectIdentifier: RedisConnection]
    /// Pub/sub and the copies' reads.
    let followers: [RedisConnection]
    private let historyLimits: ChannelHistory.Limits
    /// Where Redis going away and coming back is logged.
    private let events: EventLog?
    private let lock = Lock()
    private var copies: [String: Copy] = [:]
    private var sweep: (any DispatchSourceTimer)?
    private var cancellables: [AnyCancellable] = []
    /// What was last logged of each connection (publishers, then followers, by index): up (true) or down.
    private var loggedUp: [Int: Bool] = [:]
    /// Announcements that could not be read (never expected from our own scripts; counted, not trusted).
    private(set) var malformedAnnouncements = 0
    /// The multi-channel subscriptions' patterns, told of each channel created in Redis (by any replica) that
    /// matches.
    private var watches: [ObjectIdentifier: ChannelWatch] = [:]
    /// This replica's id in the shared presence (random, per start).
    let replicaID = RedisChannelBroker.newGeneration()
    /// Whether a heartbeat is in flight (one at a time).
    private var heartbeating = false
    /// Whether this replica said goodbye (``depart(completion:)``): no heartbeat or presence write after it, so
    /// nothing puts it back in the shared presence.
    private var departed = false

    /// Follower connections per process.
    static let followerCount = 2
    /// Seconds a copy without subscribers is kept (a client that reconnects at once finds it live).
    static let idleGraceSeconds: UInt64 = 5
    /// Announcements (and their bytes) held per copy while it loads; past either they are dropped and the load,
    /// or the read that the next gap starts, fetches those events from Redis instead.
    static let heldAnnouncementsLimit = 4096
    static let heldBytesLimit = 8 << 20

    /// A replica's copy of one channel, and where its sync is.
    ///
    /// **Thread safety:** its mutable state only under the broker's lock.
    final class Copy: @unchecked Sendable {
        typealias Waiting = (subscription: ChannelSubscription, resume: Channel.Resume)
        let channel: Channel
        let follower: Int
        /// Where the copy is in following Redis, and the subscriptions waiting for it to load.
        var sync = RedisCopySync<RedisChannelStore.Announcement, Waiting>(
            heldAnnouncementsLimit: RedisChannelBroker.heldAnnouncementsLimit,
            heldBytesLimit: RedisChannelBroker.heldBytesLimit
        )
        var idleSince: UInt64?
        var retired = false
        /// This replica's presence on the channel changed since it was last written to Redis.
        var presenceDirty = false
        /// A write of this replica's presence is in flight (one at a time; a change meanwhile writes again after).
        var presenceWriting = false
        /// This replica has a field in the channel's presence hash (its heartbeat keeps the key alive).
        var presenceWritten = false

        init(channel: Channel, follower: Int) {
            self.channel = channel
            self.follower = follower
        }
    }

    /// Why a publish (or a read) was not answered with a result.
    enum PublishFailure: Error, Equatable {
        /// The Redis store holds ``SpoutConfiguration/Channels/maxChannels`` channels.
        case tooManyChannels
        /// Certainly nothing was stored: the command was never written (not connected, too many waiting), or Redis
        /// refused it before storing anything (an error reply, e.g. over `maxmemory`).
        case unavailable(String)
        /// The command was written but its reply did not come (Redis stalled past the command timeout, or the
        /// connection broke): the events may have been stored, and delivered, or not.
        case outcomeUnknown(String)
        /// The publish's `Idempotency-Key` was stored with another fingerprint.
        case keyReused
    }

    /// A failed command's ``PublishFailure``: ``PublishFailure/unavailable(_:)`` only when it is certain the
    /// command did not run, else ``PublishFailure/outcomeUnknown(_:)``. The connection fails a command that it had
    /// written and one it had only queued with the same error, so a lost connection or a close counts as unknown.
    static func failure(_ error: RedisError) -> PublishFailure {
        switch error {
        case .connection(.notConnected), .connection(.tooManyPendingCommands), .connection(.connectTimedOut),
            .connection(.handshakeFailed), .writeBufferFull, .server:
            // Never written (the first four wait in the queue until the handshake is done), or refused by Redis:
            // the publish script's only errors come before its first write, and a write refused over maxmemory
            // is its first.
            .unavailable(error.description)
        case .connection(.timedOut), .connection(.connectionLost), .connection(.closed),
            .connection(.protocolViolation), .connection(.unexpectedReply), .unexpectedReply:
            .outcomeUnknown(error.description)
        }
    }

    /// - Parameter tls: The client context of a `rediss://` URL (``RedisConfiguration/tls``).
    /// - Parameter maxBodyBytes: The largest publish body (`limits.maxBodyBytes`): a batch's command and its
    ///   announcement are about that large, so the connections' reply and write limits are above it.
    init(
        configuration: SpoutConfiguration.Channels,
        url: RedisURL,
        metrics: ChannelMetrics,
        loops: [EventLoop],
        maxBodyBytes: Int = 4 << 20,
        events: EventLog? = nil,
        tls: TLSContext? = nil
    ) {
        self.configuration = configuration
        self.events = events
        self.metrics = metrics
        self.store = RedisChannelStore(prefix: configuration.redisKeyPrefix)
        self.historyLimits = ChannelBroker.historyLimits(configuration)
        // Without the server's loops (a broker made on its own, in tests): one loop of its own for everything.
        let ownLoops = loops.isEmpty ? [EventLoop(label: "spout.redis")] : loops
        let body = max(0, maxBodyBytes)
        let messageBytes = max(64 << 20, body.addingReportingOverflow(body / 4 &+ (1 << 20)).partialValue)
        func settings(_ name: String) -> RedisConfiguration {
            var settings = RedisConfiguration(
                url: url,
                clientName: name,
                maxReplyBytes: messageBytes,
                maxOutboundBytes: messageBytes,
                tls: tls
            )
            // A follower reads the history on the connection it subscribed on, which only RESP3 allows: a Redis
            // before 6 is refused with a message that names the cause (in /ready and the log).
            settings.requiresRESP3 = true
            return settings
        }
        publishers = ownLoops.enumerated().map { index, loop in
            RedisConnection(configuration: settings("spout-publish-\(index)"), loop: loop)
        }
        publisherByLoop = Dictionary(
            uniqueKeysWithValues: zip(ownLoops.map(ObjectIdentifier.init), publishers)
        )
        followers = (0..<Self.followerCount).map { index in
            RedisConnection(configuration: settings("spout-follow-\(index)"), loop: ownLoops[index % ownLoops.count])
        }
    }

    /// Connects, follows the followers' announcements and state, and starts the sweep of unused copies.
    func start() {
        var subscriptions: [AnyCancellable] = []
        for (index, follower) in followers.enumerated() {
            subscriptions.append(
                follower.pushes.sink { [weak self] push in
                    guard case .message(let channel, let payload) = push else { return }
                    self?.announced(channel: channel, payload: payload)
                }
            )
            subscriptions.append(
                follower.statusUpdates.sink { [weak self] status in
                    if status.isConnected { self?.followerConnected(index) }
                }
            )
        }
        let connections = publishers.map { ($0, "publish") } + followers.map { ($0, "subscribe") }
        for (index, (connection, role)) in connections.enumerated() {
            subscriptions.append(
                connection.statusUpdates.sink { [weak self] status in
                    self?.statusChanged(connection: index, role: role, to: status, url: connection.configuration.url)
                }
            )
        }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "spout.channels.redis", qos: .utility))
        timer.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(250))
        timer.setEventHandler { [weak self] in
            guard let self else {
                timer.cancel()
                return
            }
            sweepCopies()
        }
        lock.withLock {
            cancellables = subscriptions
            sweep = timer
        }
        for publisher in publishers { publisher.start() }
        for follower in followers { follower.start() }
        timer.resume()
    }

    /// Closes the connections and ends the sweep.
    func stop() {
        let (timer, subscriptions) = lock.withLock {
            defer {
                sweep = nil
                cancellables = []
            }
            return (sweep, cancellables)
        }
        timer?.cancel()
        for subscription in subscriptions { subscription.cancel() }
        for publisher in publishers { publisher.close() }
        for follower in followers { follower.close() }
    }

    /// Logs a connection that went away (`redis_unavailable`, warn, once until it is back) or came back
    /// (`redis_connected`, info), not every failed attempt in between.
    private func statusChanged(connection index: Int, role: String, to status: RedisConnectionStatus, url: RedisURL) {
        let change: Bool? = lock.withLock {
            switch status {
            case .connected where loggedUp[index] != true:
                loggedUp[index] = true
                return true
            case .reconnecting where loggedUp[index] != false:
                loggedUp[index] = false
                return false
            default:
                return nil
            }
        }
        guard let change, let events else { return }
        let fields: [(String, EventLog.Value)] = [
            ("role", .string(role)), ("connection", .integer(index)), ("redis", .string(url.description)),
        ]
        if change {
            events.log(.info, "redis_connected", "connected to redis (\(role) connection \(index))", fields)
        } else {
            events.log(
                .warn,
                "redis_unavailable",
                "redis is unavailable (\(role) connection \(index)): \(status); publishes get 503, streams wait",
                fields + [("status", .string(status.description))]
            )
        }
    }

    /// The publisher connections' state (for `/ready`): connected when all are, else the first that is not.
    var status: RedisConnectionStatus {
        publishers.lazy.map(\.status).first { !$0.isConnected } ?? .connected
    }

    /// The publisher connection of `loop` (the first when `loop` is not one of the server's).
    func publisher(for loop: EventLoop) -> RedisConnection {
        publisherByLoop[ObjectIdentifier(loop)] ?? publishers[0]
    }

    // MARK: Publishing

    /// Stores `items` on `name` in Redis through `loop`'s connection; `completion` (on `loop`) gets their ids
    /// once Redis has them. The replicas' subscribers, this one's included, get the events from Redis's
    /// announcement. With `idempotency`, a key Redis holds already answers the ids it was stored with (nothing is
    /// published), or ``PublishFailure/keyReused`` when the fingerprint differs.
    func publish(
        _ items: [ChannelPublication],
        on name: String,
        loop: EventLoop,
        idempotency: RedisChannelStore.Idempotency? = nil,
        completion: @escaping @Sendable (Result<[String], PublishFailure>) -> Void
    ) {
        let command = store.publishCommand(
            items,
            on: name,
            generation: Self.newGeneration(),
            limits: configuration,
            idempotency: idempotency
        )
        let metrics = metrics
        let completion = Self.on(loop, completion)
        publisher(for: loop).send(command) { result in
            switch result {
            case .success(let value):
                guard let (generation, first, repeated) = RedisChannelStore.publishReply(value) else {
                    // Whatever ran, it answered something else than the script's reply: no telling what it stored.
                    completion(.failure(.outcomeUnknown("redis answered the publish with \(value.briefDescription)")))
                    return
                }
                let ids = (0..<UInt64(items.count)).map {
                    ChannelEventID(epoch: generation, sequence: first &+ $0).description
                }
                if !repeated { metrics.published.increment(by: ids.count) }
                completion(.success(ids))
            case .failure(.server(let message)) where message.hasPrefix(RedisChannelStore.tooManyChannelsMarker):
                completion(.failure(.tooManyChannels))
            case .failure(.server(let message)) where message.hasPrefix(RedisChannelStore.keyReusedMarker):
                completion(.failure(.keyReused))
            case .failure(let error):
                completion(.failure(Self.failure(error)))
            }
        }
    }

    /// A random generation: 10 base-36 digits.
    static func newGeneration() -> String {
        let text = String(UInt64.random(in: 0..<3_656_158_440_062_976), radix: 36)
        return String(repeating: "0", count: max(0, 10 - text.count)) + text
    }

    // MARK: Subscribing

    /// Creates the subscription `make` builds on this replica's copy of `name` (made if need be) and joins it:
    /// at once when the copy is live, else when it has loaded (the subscription's stream is open meanwhile).
    /// On the subscriber's loop.
    func subscribe(
        to name: String,
        resume: Channel.Resume,
        make: (Channel) -> ChannelSubscription
    ) -> Result<ChannelSubscription, ChannelBroker.Refusal> {
        for _ in 0..<2 {
            let outcome:
                Result<
                    (ChannelSubscription, Copy, joinNow: Bool, needsRead: Bool, created: Bool), ChannelBroker.Refusal
                > =
                    lock.withLock {
                        var created = false
                        let copy: Copy
                        if let existing = copies[name] {
                            copy = existing
                        } else {
                            guard copies.count < configuration.maxChannels else { return .failure(.tooManyChannels) }
                            copy = Copy(
                                channel: Channel(
                                    name: name,
                                    epoch: "",
                                    history: historyLimits,
                                    maxSubscribers: configuration.maxSubscribersPerChannel,
                                    mirrorsRedis: true,
                                    localPresenceChanged: { [weak self] channel in
                                        self?.localPresenceChanged(channel.name)
                                    }
                                ),
                                follower: Self.follower(for: name, count: followers.count)
                            )
                            copies[name] = copy
                            metrics.channels.add(1)
                            created = true
                        }
                        guard
                            copy.channel.subscriberCount + copy.sync.waiting.count
                                < configuration.maxSubscribersPerChannel
                        else { return .failure(.tooManySubscribers) }
                        copy.idleSince = nil
                        let subscription = make(copy.channel)
                        // An id of another generation than the copy's: the copy may not have heard of it yet (a client
                        // that saw the first events of a new generation on another replica). Only Redis can tell
                        // whether it is newer or gone, so the join waits for a read that starts after it.
                        var resumesAfter: String?
                        if case .after(let id) = resume { resumesAfter = id }
                        let stranger = resumesAfter.flatMap { ChannelEventID($0) }.map {
                            $0.epoch != copy.channel.position.epoch
                        }
                        let joinNow = copy.sync.subscribe((subscription, resume), stranger: stranger == true)
                        return .success((subscription, copy, joinNow, created || stranger == true, created))
                    }
            switch outcome {
            case .failure(let refusal):
                return .failure(refusal)
            case .success(let (subscription, copy, joinNow, needsRead, created)):
                if needsRead { sync(copy) }
                // The other replicas' subscribers already here are no news to the ones joining now.
                if created { loadPresence(copy, announce: false) }
                guard joinNow else { return .success(subscription) }
                switch subscription.join(resume: resume, now: ChannelBroker.now) {
                case nil: return .success(subscription)
                case .full?: return .failure(.tooManySubscribers)
                case .retired?: continue
                }
            }
        }
        return .failure(.tooManyChannels)
    }

    /// This replica's copy of channel `name`, if it has one.
    func copy(named name: String) -> Channel? {
        lock.withLock { copies[name].flatMap { $0.retired ? nil : $0.channel } }
    }

    /// The follower of channel `name`: a stable hash (FNV-1a) of the name, so every replica picks the same.
    static func follower(for name: String, count: Int) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return Int(hash % UInt64(max(1, count)))
    }

    // MARK: Reads for the routes

    /// The newest event of `name`, from Redis; nil when it has none. `completion` on `loop`.
    func latest(
        of name: String,
        loop: EventLoop,
        completion: @escaping @Sendable (Result<ChannelEvent?, PublishFailure>) -> Void
    ) {
        let limits = historyLimits
        let completion = Self.on(loop, completion)
        publisher(for: loop).send(store.latestCommand(name)) { result in
            switch result {
            case .success(let value):
                guard let snapshot = RedisChannelStore.snapshot(value) else {
                    completion(.failure(.unavailable("redis answered with \(value.briefDescription)")))
                    return
                }
                guard !snapshot.generation.isEmpty, let entry = snapshot.entries.first else {
                    completion(.success(nil))
                    return
                }
                let stored = Self.stored(entry, redisNow: snapshot.nowMilliseconds, now: ChannelBroker.now)
                if ChannelBroker.now &- stored.publishedAt > limits.ageNanoseconds {
                    completion(.success(nil))
                    return
                }
                let id = ChannelEventID(epoch: snapshot.generation, sequence: stored.sequence)
                completion(
                    .success(
                        ChannelEvent(id: id, type: stored.type, data: stored.data, publishedAt: stored.publishedAt)
                    )
                )
            case .failure(let error):
                completion(.failure(.unavailable(error.description)))
            }
        }
    }

    /// Every channel Redis holds, with this replica's subscriber counts. `completion` on `loop`.
    func summaries(
        loop: EventLoop,
        completion: @escaping @Sendable (Result<[Channel.Summary], PublishFailure>) -> Void
    ) {
        let completion = Self.on(loop, completion)
        publisher(for: loop).send(store.listCommand(limit: configuration.maxChannels, limits: configuration)) {
            [weak self] result in
            switch result {
            case .success(let value):
                guard let listings = RedisChannelStore.listing(value) else {
                    completion(.failure(.unavailable("redis answered with \(value.briefDescription)")))
                    return
                }
                let local = self?.lock.withLock { self?.copies.mapValues(\.channel) } ?? [:]
                completion(
                    .success(
                        listings.map { listing in
                            Channel.Summary(
                                name: listing.name,
                                subscribers: local[listing.name]?.subscriberCount ?? 0,
                                lastID: listing.generation.isEmpty || listing.lastSequence == 0
                                    ? nil
                                    : ChannelEventID(epoch: listing.generation, sequence: listing.lastSequence)
                                        .description,
                                historyEvents: listing.entries,
                                historyBytes: listing.bytes
                            )
                        }
                    )
                )
            case .failure(let error):
                completion(.failure(.unavailable(error.description)))
            }
        }
    }

    // MARK: Following (on the followers' loops)

    /// Reads what `copy` misses (everything, for a copy not loaded yet) on its follower, unless a read is under
    /// way. The follower subscribes to the announcements first, on the same connection, so the read's snapshot
    /// and the announcements after it are in order.
    private func sync(_ copy: Copy) {
        let action: RedisCopySync<RedisChannelStore.Announcement, Copy.Waiting>.ReadAction = lock.withLock {
            guard !copy.retired else { return .none }
            return copy.sync.startRead { copy.channel.position }
        }
        guard case .read(let after) = action else { return }
        let follower = followers[copy.follower]
        let name = copy.channel.name
        // Subscribing twice is harmless (Redis confirms again; the connection keeps one entry).
        follower.send(RESPCommand("SUBSCRIBE", store.pubsubChannel(name))) { _ in }
        // Read in pieces that stay well inside the connection's reply limit (64 MiB) however large events are.
        let count = Self.readCount(configuration)
        follower.send(store.readCommand(name, after: after, count: count)) { [weak self] result in
            self?.synced(copy, after: after, count: count, result: result)
        }
    }

    private func synced(
        _ copy: Copy,
        after: UInt64?,
        count: Int,
        result: Result<RESPValue, RedisError>
    ) {
        guard case .success(let value) = result, let snapshot = RedisChannelStore.snapshot(value) else {
            // Unreachable or an odd reply: try again at the next reconnect or sweep.
            lock.withLock { copy.sync.readFailed() }
            return
        }
        let now = ChannelBroker.now
        let channel = copy.channel
        let position = channel.position
        if snapshot.generation.isEmpty {
            // Redis has no such channel (never published, expired, or lost): what the copy held is gone.
            if !position.epoch.isEmpty || position.sequence != 0 {
                channel.breakHistory(reason: .unknownID, epoch: "")
            }
        } else if after != nil, position.epoch != snapshot.generation {
            // The read went on from the copy's sequence in its old generation, but Redis lost the channel and it
            // was published to again meanwhile: a new generation, counted from 1 again, whose first events that
            // read skipped. Start over in the new generation and read it from its beginning (held announcements
            // and waiting joins stay for that read's end).
            channel.breakHistory(reason: .unknownID, epoch: snapshot.generation)
            lock.withLock { copy.sync.readContinues() }
            sync(copy)
            return
        } else {
            let stored = snapshot.entries.map {
                Self.stored($0, redisNow: snapshot.nowMilliseconds, now: now)
            }
            if position.epoch == snapshot.generation, position.sequence != 0,
                snapshot.lastSequence > position.sequence,
                (stored.first?.sequence ?? UInt64.max) > position.sequence &+ 1
            {
                // Redis trimmed (or expired) some of what the copy missed.
                channel.breakHistory(reason: .historyTruncated, epoch: snapshot.generation)
            }
            if channel.apply(stored, epoch: snapshot.generation, now: now) != .continuous {
                channel.breakHistory(reason: .historyTruncated, epoch: snapshot.generation)
                channel.apply(stored, epoch: snapshot.generation, now: now)
            }
            if snapshot.entries.count >= count {
                // More than one read's worth: read on from where this one ended.
                lock.withLock { copy.sync.readContinues() }
                sync(copy)
                return
            }
        }
        let completion = lock.withLock { copy.sync.readCompleted() }
        var followedOn = true
        for announcement in completion.held where !apply(announcement, to: copy, now: now) {
            followedOn = false  // the read it started fetches the rest
            break
        }
        // Announcements dropped while held may have been the last ones: read what they carried. Joins waiting for
        // a read that started after them get it here too (or from the read the gap started).
        if completion.readAgain, followedOn { sync(copy) }
        if completion.joinsWait { return }
        for (subscription, resume) in completion.joins {
            subscription.loop.execute {
                switch subscription.join(resume: resume, now: ChannelBroker.now) {
                case nil: break
                case .full?, .retired?: subscription.cancel()
                }
            }
        }
    }

    /// An announcement on a follower.
    private func announced(channel: [UInt8], payload: [UInt8]) {
        if channel.elementsEqual(store.creationChannel.utf8) {
            created(String(decoding: payload, as: UTF8.self))
            return
        }
        if channel.elementsEqual(store.presenceChannel.utf8) {
            presenceAnnounced(payload)
            return
        }
        guard let name = store.channelName(pubsub: channel) else { return }
        guard let announcement = RedisChannelStore.announcement(payload) else {
            lock.withLock { malformedAnnouncements &+= 1 }
            return
        }
        let copy: Copy? = lock.withLock {
            guard let copy = copies[name], !copy.retired else { return nil }
            // Not live: held, or past the limits dropped (the read under way, or the one after it, covers them).
            return copy.sync.announced(announcement, bytes: payload.count) == .apply ? copy : nil
        }
        if let copy { apply(announcement, to: copy, now: ChannelBroker.now) }
    }

    /// Applies `announcement`; when it does not follow on, starts a read of what is missing. Returns whether it
    /// followed on.
    @discardableResult
    private func apply(_ announcement: RedisChannelStore.Announcement, to copy: Copy, now: UInt64) -> Bool {
        if announcement.first > 1, announcement.generation != copy.channel.position.epoch {
            // A generation this copy has not seen, past its first events: those were announced while the copy
            // was not listening. Redis has them (the read starts the generation over from its beginning).
            sync(copy)
            return false
        }
        // The announcement carries Redis's time of the store; its age is taken against this process's wall clock.
        let wallNow = Self.wallClockMilliseconds()
        var stored: [Channel.Stored] = []
        stored.reserveCapacity(announcement.events.count)
        for (offset, event) in announcement.events.enumerated() {
            let entry = RedisChannelStore.Entry(
                sequence: announcement.first &+ UInt64(offset),
                type: event.type,
                data: event.data,
                atMilliseconds: announcement.atMilliseconds
            )
            stored.append(Self.stored(entry, redisNow: wallNow, now: now))
        }
        switch copy.channel.apply(stored, epoch: announcement.generation, now: now) {
        case .continuous:
            return true
        case .missing:
            sync(copy)
            return false
        }
    }

    /// A follower became ready (first, or after being lost): every copy on it reads what it missed.
    private func followerConnected(_ index: Int) {
        let (mine, watching) = lock.withLock {
            (copies.values.filter { $0.follower == index && !$0.retired }, !watches.isEmpty)
        }
        if index == Self.creationFollower, watching {
            followers[index].send(RESPCommand("SUBSCRIBE", store.creationChannel)) { _ in }
        }
        for copy in mine { sync(copy) }
        if index == Self.presenceFollower { presenceFollowerConnected() }
    }

    // MARK: Patterns

    /// The follower that listens for channels being created (for the patterns).
    static let creationFollower = 0

    /// Tells `watch` of every channel created in Redis from now on that its patterns match, until
    /// ``unwatch(_:)``. The first watch subscribes the creation follower to the announcements of new channels
    /// (``RedisChannelStore/creationChannel``); it stays subscribed (one message per channel created).
    func watch(_ watch: ChannelWatch) {
        let first = lock.withLock {
            defer { watches[ObjectIdentifier(watch)] = watch }
            return watches.isEmpty
        }
        if first {
            followers[Self.creationFollower].send(RESPCommand("SUBSCRIBE", store.creationChannel)) { _ in }
        }
    }

    func unwatch(_ watch: ChannelWatch) {
        _ = lock.withLock { watches.removeValue(forKey: ObjectIdentifier(watch)) }
    }

    /// A channel was created (a new generation) in Redis: the watches that match are told, after the lock.
    private func created(_ name: String) {
        guard ChannelRoutes.isValidName(name) else { return }
        let told = lock.withLock { watches.values.filter { $0.matches(name) } }
        for watch in told { watch.created(name) }
    }

    /// The names of the channels Redis holds that `watch` matches; `completion` on `loop` (empty when Redis
    /// could not be read).
    func channelNames(
        matching watch: ChannelWatch,
        loop: EventLoop,
        completion: @escaping @Sendable ([String]) -> Void
    ) {
        summaries(loop: loop) { result in
            let names = (try? result.get())?.map(\.name).filter { watch.matches($0) } ?? []
            completion(names.sorted())
        }
    }

    /// Drops copies without subscribers for ``idleGraceSeconds``; retries copies whose read failed.
    private func sweepCopies() {
        let now = ChannelBroker.now
        let grace = Self.idleGraceSeconds * 1_000_000_000
        var unsynced: [Copy] = []
        lock.withLock {
            for (name, copy) in copies {
                // Clients that left while waiting for a copy that cannot load (Redis down) let go of their place.
                copy.sync.removeWaiting { $0.subscription.hasEnded }
                if copy.sync.waiting.isEmpty, copy.channel.subscriberCount == 0 {
                    guard let since = copy.idleSince else {
                        copy.idleSince = now
                        continue
                    }
                    // Not before its last presence write is in Redis: a field left there would count it for good.
                    if now &- since >= grace, !copy.presenceDirty, !copy.presenceWriting,
                        copy.channel.retireIfUnsubscribed()
                    {
                        copy.retired = true
                        copies[name] = nil
                        metrics.channels.add(-1)
                        // Under the lock: a copy made again for the name subscribes after this.
                        followers[copy.follower].send(RESPCommand("UNSUBSCRIBE", store.pubsubChannel(name))) { _ in }
                    }
                    continue
                }
                copy.idleSince = nil
                if copy.sync.needsRead { unsynced.append(copy) }
            }
        }
        for copy in unsynced where followers[copy.follower].status.isConnected { sync(copy) }
        heartbeat()
    }

    // MARK: Presence across replicas (on the presence follower)

    /// The follower that carries presence: the heartbeat, the writes and reads, and the announcements (one
    /// connection, so an announcement and a read's reply come in the order Redis made them).
    static let presenceFollower = 0

    /// How long a replica's heartbeat holds: ``SpoutConfiguration/Channels/replicaTimeoutSeconds``, in ms.
    private var presenceLifetimeMilliseconds: Int {
        max(1, configuration.replicaTimeoutSeconds).multipliedReportingOverflow(by: 1000).partialValue
    }

    /// The presence follower became ready (first, or after being lost): it follows the announcements again,
    /// refreshes this replica's heartbeat before anything else, writes this replica's presence on every copy
    /// (another replica may have taken it for gone meanwhile) and reads the others' (announcements were missed).
    private func presenceFollowerConnected() {
        let follower = followers[Self.presenceFollower]
        follower.send(RESPCommand("SUBSCRIBE", store.presenceChannel)) { _ in }
        let mine = lock.withLock {
            heartbeating = false
            return copies.values.filter { !$0.retired }
        }
        heartbeat()
        for copy in mine {
            lock.withLock {
                copy.presenceWriting = false
                copy.presenceDirty = false
            }
            localPresenceChanged(copy.channel.name)
            loadPresence(copy, announce: true)
        }
    }

    /// Refreshes this replica's heartbeat (and the presence keys it has fields in), then drops from every copy the
    /// presence of replicas no longer live; also retries presence writes that failed. Every second, from the sweep.
    private func heartbeat() {
        let follower = followers[Self.presenceFollower]
        guard follower.status.isConnected else { return }
        let work: (keys: [String], retry: [String])? = lock.withLock {
            guard !heartbeating, !departed else { return nil }
            heartbeating = true
            let live = copies.values.filter { !$0.retired }
            return (
                live.filter(\.presenceWritten).map(\.channel.name),
                live.filter { $0.presenceDirty && !$0.presenceWriting }.map(\.channel.name)
            )
        }
        guard let (keys, retry) = work else { return }
        for name in retry { localPresenceChanged(name) }
        let askedAt = ChannelBroker.now
        let command = store.heartbeatCommand(
            replica: replicaID,
            lifetimeMilliseconds: presenceLifetimeMilliseconds,
            channels: keys
        )
        follower.send(command) { [weak self] result in
            guard let self else { return }
            let copies = lock.withLock {
                heartbeating = false
                return self.copies.values.filter { !$0.retired }
            }
            guard case .success(let value) = result, let live = RedisChannelStore.liveReplicas(value) else { return }
            for copy in copies {
                copy.channel.dropRemoteReplicas(keeping: live, heardBefore: askedAt)
            }
        }
    }

    /// This replica's presence on channel `name` changed: writes it to Redis, unless a write is in flight (which
    /// writes again when it ends).
    private func localPresenceChanged(_ name: String) {
        let write: (Copy, RedisChannelStore.PresenceEntry)? = lock.withLock {
            guard let copy = copies[name], !copy.retired, !departed else { return nil }
            copy.presenceDirty = true
            guard !copy.presenceWriting else { return nil }
            copy.presenceWriting = true
            copy.presenceDirty = false
            let (count, clients) = copy.channel.presence
            copy.presenceWritten = count > 0
            return (copy, RedisChannelStore.PresenceEntry(count: count, clients: clients))
        }
        guard let (copy, entry) = write else { return }
        let command = store.presenceWriteCommand(
            name,
            replica: replicaID,
            entry: entry,
            lifetimeMilliseconds: presenceLifetimeMilliseconds
        )
        followers[Self.presenceFollower].send(command) { [weak self] result in
            guard let self else { return }
            let again: Bool = lock.withLock {
                copy.presenceWriting = false
                guard case .success = result else {
                    copy.presenceDirty = true  // the next heartbeat, or the reconnect, writes it again
                    return false
                }
                return copy.presenceDirty && !copy.retired
            }
            if again { localPresenceChanged(name) }
        }
    }

    /// This replica's goodbye, as it stops (a graceful shutdown, once its streams have ended): it leaves the shared
    /// presence at once, its heartbeat and its field on every channel removed, each removal announced, so the other
    /// replicas send `leave` for its subscribers now rather than ``SpoutConfiguration/Channels/replicaTimeoutSeconds``
    /// later; from then on it writes no presence and no heartbeat. `completion` (any thread) once Redis answered, or
    /// at once when the presence connection is down (its heartbeat then lapses as a dead replica's does); the
    /// connection's command timeout bounds the wait.
    func depart(completion: @escaping @Sendable () -> Void) {
        let names: [String] = lock.withLock {
            departed = true
            // Every copy, not only those with a field written: a write may be in flight (it is ahead of this on
            // the connection, so the goodbye removes what it wrote).
            return copies.values.filter { !$0.retired }.map(\.channel.name).sorted()
        }
        let follower = followers[Self.presenceFollower]
        guard follower.status.isConnected else {
            completion()
            return
        }
        follower.send(store.presenceLeaveCommand(replica: replicaID, channels: names)) { _ in completion() }
    }

    /// ``depart(completion:)``, awaited.
    func depart() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            depart { continuation.resume() }
        }
    }

    /// Reads the other replicas' presence on `copy`'s channel into it (`announce`: with `join` / `leave` for the
    /// differences).
    private func loadPresence(_ copy: Copy, announce: Bool) {
        let name = copy.channel.name
        let replicaID = replicaID
        followers[Self.presenceFollower].send(store.presenceReadCommand(name)) { result in
            guard case .success(let value) = result, let entries = RedisChannelStore.presenceRead(value) else { return }
            let now = ChannelBroker.now
            var remote: [String: Channel.RemotePresence] = [:]
            for (replica, entry) in entries where replica != replicaID {
                remote[replica] = Channel.RemotePresence(
                    count: entry.count,
                    clients: Set(entry.clients),
                    heardAt: now
                )
            }
            copy.channel.replaceRemotePresence(remote, announce: announce)
        }
    }

    /// Another replica's presence on a channel changed: the copy here, if any, takes it.
    private func presenceAnnounced(_ payload: [UInt8]) {
        guard let (replica, name, entry) = RedisChannelStore.presenceAnnouncement(payload), replica != replicaID else {
            return
        }
        guard let copy = lock.withLock({ copies[name].flatMap { $0.retired ? nil : $0 } }) else { return }
        let presence =
            entry.count == 0
            ? nil
            : Channel.RemotePresence(count: entry.count, clients: Set(entry.clients), heardAt: ChannelBroker.now)
        copy.channel.updateRemotePresence(replica: replica, to: presence, announce: true)
    }

    /// Who is subscribed to `name` on every live replica: this replica's own subscribers (exact) and the others'
    /// as Redis holds them. When Redis cannot be read (down, or an answer that is not one), the answer is what this
    /// replica knows, marked `partial`: its own subscribers and, when it holds a copy of the channel, the other
    /// replicas' as they last announced them (a dashboard keeps a view through an outage rather than a 503).
    /// `completion` on `loop`.
    func presence(
        of name: String,
        loop: EventLoop,
        completion: @escaping @Sendable (ChannelPresenceView) -> Void
    ) {
        let completion = Self.on(loop, completion)
        let replicaID = replicaID
        publisher(for: loop).send(store.presenceReadCommand(name)) { [weak self] result in
            let copy = self?.copy(named: name)
            let own: (count: Int, clients: [String]) = copy?.presence ?? (0, [])
            var count = own.count
            var clients = Set(own.clients)
            let others: [String: RedisChannelStore.PresenceEntry]
            let partial: Bool
            if case .success(let value) = result, let entries = RedisChannelStore.presenceRead(value) {
                others = entries
                partial = false
            } else {
                others = (copy?.remotePresence ?? [:]).mapValues {
                    RedisChannelStore.PresenceEntry(count: $0.count, clients: Array($0.clients))
                }
                partial = true
            }
            for (replica, entry) in others where replica != replicaID {
                count = count.addingReportingOverflow(entry.count).partialValue
                clients.formUnion(entry.clients)
            }
            completion(ChannelPresenceView(count: count, clients: clients.sorted(), partial: partial))
        }
    }

    // MARK: Helpers

    /// `completion`, called on `loop`: at once when already there (a loop's own publisher answers there), else
    /// by hopping on.
    static func on<T: Sendable>(
        _ loop: EventLoop,
        _ completion: @escaping @Sendable (T) -> Void
    ) -> @Sendable (T) -> Void {
        { value in
            if loop.inEventLoop { completion(value) } else { loop.execute { completion(value) } }
        }
    }

    /// Entries per read: the whole history when it fits in 16 MiB of largest events, else as many as do.
    static func readCount(_ configuration: SpoutConfiguration.Channels) -> Int {
        let perEntry = max(1, configuration.maxEventBytes) &+ 256
        return max(16, min(max(0, configuration.historyEvents) &+ 64, (16 << 20) / perEntry))
    }

    /// `entry` as a copy holds it: its Redis time turned into this process's monotonic clock.
    static func stored(_ entry: RedisChannelStore.Entry, redisNow: Int64, now: UInt64) -> Channel.Stored {
        let difference = redisNow.subtractingReportingOverflow(entry.atMilliseconds)
        // Overflowing (absurd times) counts as older than anything; negative (clocks apart) as just now.
        let ageMilliseconds = difference.overflow ? Int64.max : max(0, difference.partialValue)
        let ageNanoseconds = UInt64(clamping: ageMilliseconds).multipliedReportingOverflow(by: 1_000_000)
        let publishedAt =
            ageNanoseconds.overflow || ageNanoseconds.partialValue > now ? 0 : now &- ageNanoseconds.partialValue
        return Channel.Stored(sequence: entry.sequence, type: entry.type, data: entry.data, publishedAt: publishedAt)
    }

    static func wallClockMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }
}
