import Dispatch
import Foundation
import HTTPServer
import Reactive

/// The in-process channels: creates them on first use, enforces their limits, and drops idle ones.
///
/// A channel comes into being when someone publishes to it or subscribes to it, up to ``maxChannels``. A
/// channel with no subscriber and nothing left in its history (the age limit expires events) is idle: a sweep
/// once a second retires it. The broker's epoch (see ``ChannelEventID``) is fixed at creation, so ids from an
/// earlier run of the process are recognised.
///
/// **Ownership:** created once by the service context; ``stop()`` ends its sweep.
///
/// **Thread safety:** safe from any thread (a lock around the name table; each channel locks itself).
final class ChannelBroker: @unchecked Sendable {
    // @unchecked Sendable: `channels` and `sweep` are only touched under `lock`.
    let configuration: SpoutConfiguration.Channels
    let metrics: ChannelMetrics
    /// This run's epoch, in every id.
    let epoch: String
    private let historyLimits: ChannelHistory.Limits
    private let lock = Lock()
    private var channels: [String: Channel] = [:]
    private var sweep: (any DispatchSourceTimer)?
    /// The highest sequence any retired channel gave out. A channel created later (under any name) counts on
    /// from here, so an id from a channel that was dropped and then created again is never read as one of the
    /// new channel's: a client resuming with it gets every event of the new one (or a reset), none skipped.
    private var sequenceFloor: UInt64 = 0
    /// The multi-channel subscriptions' patterns, told of each channel created that matches.
    private var watches: [ObjectIdentifier: ChannelWatch] = [:]

    /// Why a channel could not be had.
    enum Refusal: Error, Equatable {
        /// ``SpoutConfiguration/Channels/maxChannels`` channels exist already.
        case tooManyChannels
        /// The channel has its most subscribers.
        case tooManySubscribers
    }

    init(configuration: SpoutConfiguration.Channels, metrics: ChannelMetrics, startedAt: Date = Date()) {
        self.configuration = configuration
        self.metrics = metrics
        let milliseconds = UInt64(clamping: Int64((startedAt.timeIntervalSince1970 * 1000).rounded()))
        self.epoch = ChannelEventID.epoch(startedAtMilliseconds: milliseconds)
        self.historyLimits = Self.historyLimits(configuration)
    }

    /// The history limits `configuration` sets.
    static func historyLimits(_ configuration: SpoutConfiguration.Channels) -> ChannelHistory.Limits {
        let seconds = max(0, configuration.historySeconds)
        return ChannelHistory.Limits(
            events: configuration.historyEvents,
            bytes: configuration.historyBytes,
            ageNanoseconds: seconds >= 1e10 ? UInt64.max : UInt64(seconds * 1e9)
        )
    }

    /// Starts the once-a-second sweep of idle channels and expired history.
    func start() {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "spout.channels.sweep", qos: .utility))
        timer.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(250))
        // The broker weakly: one that is gone (its service released without stop()) cancels the timer at its
        // next tick, which also releases this handler and the timer it holds.
        timer.setEventHandler { [weak self] in
            guard let self else {
                timer.cancel()
                return
            }
            sweepIdle()
        }
        lock.withLock { sweep = timer }
        timer.resume()
    }

    /// Ends the sweep.
    func stop() {
        let timer = lock.withLock {
            defer { sweep = nil }
            return sweep
        }
        timer?.cancel()
    }

    /// Monotonic nanoseconds, the clock of history ages.
    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// The channel called `name`, created if it does not exist and there is room. The watches whose patterns
    /// match a channel created are told, after the lock.
    func channel(named name: String) -> Result<Channel, Refusal> {
        var told: [ChannelWatch] = []
        let result: Result<Channel, Refusal> = lock.withLock {
            if let channel = channels[name] { return .success(channel) }
            guard channels.count < configuration.maxChannels else { return .failure(.tooManyChannels) }
            told = watches.values.filter { $0.matches(name) }
            let channel = Channel(
                name: name,
                epoch: epoch,
                history: historyLimits,
                maxSubscribers: configuration.maxSubscribersPerChannel,
                firstSequence: sequenceFloor
            )
            channels[name] = channel
            metrics.channels.add(1)
            return .success(channel)
        }
        for watch in told { watch.created(name) }
        return result
    }

    /// Tells `watch` of every channel created from now on that its patterns match, until ``unwatch(_:)``.
    func watch(_ watch: ChannelWatch) {
        lock.withLock { watches[ObjectIdentifier(watch)] = watch }
    }

    func unwatch(_ watch: ChannelWatch) {
        _ = lock.withLock { watches.removeValue(forKey: ObjectIdentifier(watch)) }
    }

    /// The names of the channels that exist and `watch`'s patterns match, by name.
    func channelNames(matching watch: ChannelWatch) -> [String] {
        lock.withLock { channels.keys.filter { watch.matches($0) } }.sorted()
    }

    /// The channel called `name` if it exists; never creates one.
    func existingChannel(named name: String) -> Channel? {
        lock.withLock { channels[name] }
    }

    /// Publishes `items` on `name` (created if need be); returns their ids.
    func publish(_ items: [ChannelPublication], on name: String) -> Result<[String], Refusal> {
        // A channel retired between the lookup and the publish is looked up (created) again: the sweep takes it
        // out of the table as it retires it, so the second lookup finds a live one.
        for _ in 0..<3 {
            switch channel(named: name) {
            case .failure(let refusal):
                return .failure(refusal)
            case .success(let channel):
                if let ids = channel.publish(items, now: Self.now) {
                    metrics.published.increment(by: ids.count)
                    return .success(ids)
                }
            }
        }
        return .failure(.tooManyChannels)
    }

    /// Looks up (or creates) channel `name` and joins a subscription to it, which `make` builds for the channel
    /// found; retries over a retirement as ``publish(_:on:)`` does. On the subscriber's loop.
    func subscribe(
        to name: String,
        resume: Channel.Resume,
        make: (Channel) -> ChannelSubscription
    ) -> Result<ChannelSubscription, Refusal> {
        for _ in 0..<3 {
            switch channel(named: name) {
            case .failure(let refusal):
                return .failure(refusal)
            case .success(let channel):
                let subscription = make(channel)
                switch subscription.join(resume: resume, now: Self.now) {
                case nil: return .success(subscription)
                case .full?: return .failure(.tooManySubscribers)
                case .retired?: continue
                }
            }
        }
        return .failure(.tooManyChannels)
    }

    /// Summaries of every channel, by name.
    func summaries() -> [Channel.Summary] {
        let now = Self.now
        return lock.withLock { Array(channels.values) }
            .map { $0.summary(now: now) }
            .sorted { $0.name < $1.name }
    }

    /// Retires and forgets idle channels; expires history everywhere. Under the broker's lock (the only place
    /// that takes a channel's lock inside it), so a lookup never returns a channel that is already retired.
    func sweepIdle() {
        let now = Self.now
        lock.withLock {
            for (name, channel) in channels where channel.retireIfIdle(now: now) {
                // Retired: it publishes no more, so its last sequence is final.
                sequenceFloor = max(sequenceFloor, channel.lastSequence)
                channels[name] = nil
                metrics.channels.add(-1)
            }
        }
    }
}

/// A multi-channel subscription's patterns (`news.*`: the names that start with `news.`), and what to do when a
/// channel they match is created.
///
/// **Thread safety:** immutable; ``created(_:)`` is called on the creating thread, after the broker's lock.
final class ChannelWatch: Sendable {
    /// The patterns' prefixes.
    let prefixes: [String]
    private let handler: @Sendable (String) -> Void

    init(prefixes: [String], created handler: @escaping @Sendable (String) -> Void) {
        self.prefixes = prefixes
        self.handler = handler
    }

    func matches(_ name: String) -> Bool {
        prefixes.contains { name.utf8.starts(with: $0.utf8) }
    }

    func created(_ name: String) { handler(name) }
}

/// What `GET /channels/{name}/presence` answers: how many subscribe, the names given, and whether it is partial.
///
/// **Thread safety:** value type.
struct ChannelPresenceView: Equatable, Sendable {
    var count: Int
    var clients: [String]
    /// Over Redis, when Redis could not be read: this replica's view only (its own subscribers, and the other
    /// replicas' as last announced to it), which may miss or still count others.
    var partial: Bool
}
