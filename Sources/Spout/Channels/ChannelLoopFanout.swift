import Dispatch
import EventLoops
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
/// An event that follows a quiet spell goes out at once, and one that arrives while a batch is being handed out
/// joins it: the subscriptions not reached yet get it in the same `send`. Batches are at least
/// ``coalescingInterval`` apart, and when ``overloadEvents`` or more events arrived while a batch was being
/// handed out (thousands of subscribers, a publisher as fast as the fan-out) the next pass, for the
/// subscriptions already reached, waits as long as that batch took, so that whatever else arrives meanwhile goes
/// out with it. Each subscriber's socket then takes one `send(2)` per batch rather than one per event, the
/// fan-out keeps at most about half the loop, and publishes on the loop are answered in between; that is what
/// lets one process feed thousands of readers at a high publish rate. Without that pause a publisher whose
/// answer waits on the loop (a publish through Redis, whose reply is read there) gets one event per pass, a
/// `send` per subscriber per event, and the loop has no time left for its replies: measured, half the
/// throughput and twice the CPU (bench/channels_redis.sh, one replica).
///
/// A copy of a Redis channel (``Pacing/redisCopy``) also spaces its batches by what they cost: the next begins no
/// sooner than ``Pacing/loopShare`` times as long after the previous began as that one took, so its fan-out keeps
/// about an eighth of its loop. There a publish is answered only after Redis stored it, and both the request and
/// Redis's reply are read on loops that also fan out: with the in-process rules, passes of one event each (a
/// `send` per subscriber per event) kept the cores busy with sends, the publisher's answers waited for the
/// scheduler, and the publish rate, hence the batch size, stayed low. The spacing is capped, for latency: at 40 ms
/// (``Pacing/longestSpacing``) while events come at up to ``Pacing/busyRate`` a second, and above that rate by a
/// cap that grows with it, up to ``Pacing/longestBusySpacing``: when events come fast and passes are slow
/// (thousands of subscribers), each pass then carries more of them, so fewer `send`s carry the same events, and
/// the cores they free answer publishes sooner, which raises the rate again. A fixed 40 ms cap held the passes
/// of a fast publisher to ~20 events and two replicas to about 0.6x of one process's events/s. The price is
/// latency at saturation, not at moderate rates; docs/ARCHITECTURE.md ("Over Redis") and bench/README.md give the
/// measured figures, and what was tried instead.
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
    /// The earliest time the next batch may be taken, in monotonic nanoseconds.
    private var nextBatchNotBefore: UInt64 = 0
    /// The shortest time between two batches, in nanoseconds.
    static let coalescingInterval: UInt64 = 1_000_000
    /// The longest pause after a batch, however long it took, in nanoseconds.
    static let longestPause: UInt64 = 20_000_000
    /// Events arriving while one batch is handed out from which the fan-out pauses after it (see above). Two
    /// (pausing only when events come faster than batches) gave no better p99 at 100 events/s in quiet runs
    /// and halved the throughput through Redis.
    static let overloadEvents = 1
    private var upstream: (any Subscription)?
    private var detached = false
    /// The loop's subscribers of the channel. // Loop-confined.
    private var subscriptions: [ChannelSubscription] = []

    /// How batches are spaced.
    struct Pacing: Equatable {
        /// The fan-out's pass may take at most one `loopShare`-th of the time between batch starts (0: no
        /// such bound).
        var loopShare: UInt64
        /// The longest spacing that bound imposes at up to ``busyRate`` events a second, in nanoseconds.
        var longestSpacing: UInt64
        /// The rate (events a second) above which the longest spacing grows in proportion to the rate (0:
        /// never).
        var busyRate: UInt64
        /// The longest spacing at any rate, in nanoseconds.
        var longestBusySpacing: UInt64

        /// A channel published in this process: batches as soon as the rules above allow.
        static let inProcess = Pacing(loopShare: 0, longestSpacing: 0, busyRate: 0, longestBusySpacing: 0)
        /// A replica's copy of a Redis channel: passes keep about an eighth of the loop, batches at most 40 ms
        /// apart for that reason up to 400 events a second, and above it 10 ms more per 100 events a second, up
        /// to 120 ms.
        static let redisCopy = Pacing(
            loopShare: 8,
            longestSpacing: 40_000_000,
            busyRate: 400,
            longestBusySpacing: 120_000_000
        )

        /// The cap on the spacing when events arrive at `eventsPerSecond`.
        func spacingCap(eventsPerSecond: UInt64) -> UInt64 {
            guard busyRate > 0, eventsPerSecond > busyRate else { return longestSpacing }
            let (grown, overflow) = (longestSpacing / busyRate).multipliedReportingOverflow(by: eventsPerSecond)
            return overflow ? longestBusySpacing : min(grown, longestBusySpacing)
        }

        /// How long after a pass began the next may begin, given that it took `passTook` nanoseconds and that
        /// events arrive at `eventsPerSecond`.
        func spacing(passTook: UInt64, eventsPerSecond: UInt64) -> UInt64 {
            let cap = spacingCap(eventsPerSecond: eventsPerSecond)
            let (scaled, overflow) = passTook.multipliedReportingOverflow(by: loopShare)
            return overflow ? cap : min(scaled, cap)
        }

        /// The earliest start of the next pass after one that began at `passBegan` (the one before it at
        /// `previousBegan`), carried `events` and ended at `now` (monotonic nanoseconds): the events over the time
        /// between the two starts give the rate, the pass's length and the rate give the spacing.
        func nextPassNotBefore(passBegan: UInt64, previousBegan: UInt64, events: UInt64, now: UInt64) -> UInt64 {
            let rate = Pacing.rate(events: events, overNanoseconds: passBegan &- previousBegan)
            let (end, overflow) = passBegan.addingReportingOverflow(
                spacing(passTook: now &- passBegan, eventsPerSecond: rate)
            )
            return overflow ? .max : end
        }

        /// `events` over `nanoseconds`, a second's worth (0 over no time).
        static func rate(events: UInt64, overNanoseconds nanoseconds: UInt64) -> UInt64 {
            guard nanoseconds > 0 else { return 0 }
            let (scaled, overflow) = events.multipliedReportingOverflow(by: 1_000_000_000)
            return overflow ? UInt64.max : scaled / nanoseconds
        }
    }

    let pacing: Pacing

    init(loop: EventLoop, pacing: Pacing = .inProcess) {
        self.loop = loop
        self.pacing = pacing
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
        let now = DispatchTime.now().uptimeNanoseconds
        let delay: UInt64? = lock.withLock {
            guard !detached else { return nil }
            inbox.append(event)
            if drainScheduled { return nil }
            drainScheduled = true
            return delayBeforeNextBatch(now: now)
        }
        if let delay { scheduleDrain(after: delay) }
        return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}

    // MARK: Loop side

    /// Subscriptions handed a batch per loop task: a task that takes a few hundred microseconds, so that a
    /// publish request on this loop waits at most that long rather than for the whole fan-out. (Publishing
    /// sooner also lets more events join each batch when many subscribers make the fan-out slow.)
    static let sliceSize = 64

    /// The batch being handed out, the subscriptions it goes to (those joined when it was taken: one that joins
    /// later starts after these events anyway, or gets the late ones in the next pass), and the next of them.
    /// // Loop-confined.
    private var batch: [ChannelEvent] = []
    /// When the batch under way was taken, and the one before it (their difference and the batch's size give
    /// the rate events arrive at).
    private var batchStarted: UInt64 = 0
    private var previousBatchStarted: UInt64 = 0
    private var recipients: [ChannelSubscription] = []
    private var cursor = 0
    /// Events that joined the pass under way after it began: the subscriptions it had already reached get
    /// them in the next pass (the others skip them there, by sequence).
    private var late: [ChannelEvent] = []

    /// Must be called under the lock.
    private func delayBeforeNextBatch(now: UInt64) -> UInt64 {
        nextBatchNotBefore > now ? nextBatchNotBefore &- now : 0
    }

    private func scheduleDrain(after delay: UInt64) {
        if delay == 0 {
            loop.execute { [self] in drain() }
        } else {
            loop.schedule(afterNanoseconds: delay) { [self] in drain() }
        }
    }

    /// One step of handing batches out, in order: takes the next batch if none is under way (or else adds to
    /// it the events that arrived since), hands it to the next ``sliceSize`` subscriptions, and schedules the
    /// next step (or the next batch) if there is more.
    ///
    /// An event that arrives while a batch is being handed out joins it: the subscriptions not reached yet get
    /// it with the rest, in the same `send`, and only those already reached wait for the next pass. So at a
    /// publish rate close to what the fan-out can take, an event does not wait for the whole previous fan-out.
    /// Each subscription skips what it already has (``ChannelSubscription/deliver(_:)`` goes by sequence).
    private func drain() {
        if cursor >= recipients.count {
            let now = DispatchTime.now().uptimeNanoseconds
            previousBatchStarted = batchStarted
            batchStarted = now
            let taken: [ChannelEvent] = lock.withLock {
                nextBatchNotBefore = now &+ Self.coalescingInterval
                defer { inbox = [] }
                return inbox
            }
            if late.isEmpty {
                batch = taken
            } else {
                batch = late
                batch.append(contentsOf: taken)
                late = []
            }
            recipients = batch.isEmpty ? [] : subscriptions
            cursor = 0
        } else {
            let arrived: [ChannelEvent] = lock.withLock {
                guard !inbox.isEmpty else { return [] }
                defer { inbox = [] }
                return inbox
            }
            if !arrived.isEmpty {
                batch.append(contentsOf: arrived)
                late.append(contentsOf: arrived)
            }
        }
        let end = min(cursor &+ Self.sliceSize, recipients.count)
        while cursor < end {
            let subscription = recipients[cursor]
            cursor &+= 1
            // A subscription that left meanwhile ignores it.
            subscription.deliver(batch)
        }
        if cursor < recipients.count {
            loop.execute { [self] in drain() }
            return
        }
        let events = UInt64(batch.count)
        batch = []
        recipients = []
        cursor = 0
        let now = DispatchTime.now().uptimeNanoseconds
        let pause = min(now &- batchStarted, Self.longestPause)
        let arrivedDuringBatch = late.count
        let spacedUntil = pacing.nextPassNotBefore(
            passBegan: batchStarted,
            previousBegan: previousBatchStarted,
            events: events,
            now: now
        )
        let delay: UInt64? = lock.withLock {
            // Also when nothing is waiting: the next event to arrive is spaced the same way.
            nextBatchNotBefore = max(nextBatchNotBefore, spacedUntil)
            guard !inbox.isEmpty || !late.isEmpty, !detached else {
                drainScheduled = false
                return nil
            }
            // Events arrived while this batch was handed out: the publisher keeps pace with the fan-out, so let
            // the next pass gather for as long as this one took (those not reached got them in this one).
            if arrivedDuringBatch &+ inbox.count >= Self.overloadEvents {
                nextBatchNotBefore = max(nextBatchNotBefore, now &+ pause)
            }
            return delayBeforeNextBatch(now: now)
        }
        if delay == nil { late = [] }
        if let delay { scheduleDrain(after: delay) }
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
