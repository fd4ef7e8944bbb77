import Reactive
import Testing

@testable import Spout

/// A subscriber's feed machine on its own (no sockets, no loop, no channel): filtering, order, demand, the bound
/// and its policies, conflation, the gap, the end.
@Suite struct ChannelFeedTests {
    private func makeFeed(
        events: Int = 100,
        bytes: Int = 1 << 20,
        overflow: ChannelSubscription.Overflow = .disconnect,
        conflate: Bool = false,
        wantsPresence: Bool = false
    ) -> ChannelFeed {
        ChannelFeed(
            limits: ChannelSubscription.Limits(events: events, bytes: bytes, overflow: overflow, conflate: conflate),
            usesSSE: true,
            wantsPresence: wantsPresence
        )
    }

    /// An event of the channel, `sequence` in epoch `e`.
    private func event(_ sequence: UInt64, type: String? = nil) -> ChannelEvent {
        ChannelEvent(
            id: ChannelEventID(epoch: "e", sequence: sequence),
            type: type,
            data: Array("\(sequence)".utf8),
            publishedAt: 0
        )
    }

    /// What a delivered event shows in these tests: a channel event's sequence, a control frame's name and JSON.
    private func label(_ event: ChannelEvent) -> String {
        event.isControl
            ? "\(event.eventType ?? "?")\(String(decoding: event.payload, as: UTF8.self))" : "\(event.sequence)"
    }

    /// Drains as ``ChannelSubscription`` does: hands out events while the demand lasts, adding what `answer` (the
    /// subscriber's `receive`) returns for each. Returns what was handed out and the count for the metrics.
    private func drain(
        _ feed: inout ChannelFeed,
        answer: (inout ChannelFeed, ChannelEvent) -> Subscribers.Demand = { _, _ in .none }
    ) -> (events: [String], delivered: Int) {
        guard feed.beginDrain() else { return ([], 0) }
        var events: [String] = []
        while let next = feed.nextDelivery() {
            events.append(label(next))
            let more = answer(&feed, next)
            feed.addDemand(more)
        }
        return (events, feed.endDrain())
    }

    /// Offers `events` in order, as the fan-out does, returning what the feed answered to each.
    private func offer(_ feed: inout ChannelFeed, _ events: [ChannelEvent]) -> [ChannelFeed.Offer] {
        events.map { feed.offer($0) }
    }

    @Test func theReplayComesFirstThenLiveEventsInOrderAndOnlyTheLiveOnesCountAgainstTheBound() {
        var feed = makeFeed(events: 2)
        let reset = ChannelEvent.reset(reason: .historyTruncated, oldest: "e-1")
        let replayed = feed.join(replay: [reset, event(1), event(2), event(3)], liveAfter: 3, lastControlSerial: 0)
        #expect(replayed == 3, "control frames are not counted as replayed")
        let step1 = offer(&feed, [event(4), event(5)])
        #expect(step1 == [.queued(conflated: false), .queued(conflated: false)])
        let step2 = feed.enforceBound()
        #expect(step2 == .within, "four replayed events wait, but only the two live ones count")
        feed.addDemand(.max(10))
        let drained = drain(&feed)
        #expect(drained.events == [#"reset{"reason":"history-truncated","oldest":"e-1"}"#, "1", "2", "3", "4", "5"])
        #expect(drained.delivered == 5, "the reset is not counted as delivered")
        #expect(feed.waiting == 0 && feed.demand == 4)
        let step3 = feed.offer(event(6))
        #expect(step3 == .queued(conflated: false))
        let step4 = drain(&feed)
        #expect(step4.events == ["6"])
    }

    @Test func liveEventsAlreadyHeldAndControlFramesAlreadyTakenAreSkipped() {
        var feed = makeFeed()
        let before = ChannelEvent.reset(reason: .historyTruncated, oldest: nil, live: .gap)
        _ = feed.join(replay: [event(4), event(5)], liveAfter: 5, lastControlSerial: before.controlSerial)
        let step5 = offer(&feed, [event(3), event(5)])
        #expect(step5 == [.skipped, .skipped], "replayed or published before the join")
        let step6 = feed.offer(before)
        #expect(step6 == .skipped, "made before the join")
        let step7 = feed.offer(event(6))
        #expect(step7 == .queued(conflated: false))
        let step8 = feed.offer(event(6))
        #expect(step8 == .skipped, "handed out again by a later pass of the fan-out")
        let after = ChannelEvent.reset(reason: .historyTruncated, oldest: nil, live: .gap)
        let step9 = feed.offer(after)
        #expect(step9 == .queued(conflated: false))
        let step10 = feed.offer(after)
        #expect(step10 == .skipped, "a live control frame is taken once")
        let step11 = feed.offer(event(7))
        #expect(step11 == .queued(conflated: false))
        feed.addDemand(.unlimited)
        let step12 = drain(&feed)
        #expect(step12.events == ["4", "5", "6", #"reset{"reason":"history-truncated","oldest":null}"#, "7"])
    }

    @Test func aRestartStartsTheSequencesOver() {
        var feed = makeFeed()
        _ = feed.join(replay: [], liveAfter: 0, lastControlSerial: ChannelEvent.lastControlSerial)
        let step13 = offer(&feed, [event(1), event(2)])
        #expect(step13.allSatisfy { $0 != .skipped })
        let step14 = feed.offer(event(1))
        #expect(step14 == .skipped, "without a restart, a small sequence is old")
        let restart = ChannelEvent.reset(reason: .unknownID, oldest: nil, live: .restart)
        let step15 = feed.offer(restart)
        #expect(step15 == .queued(conflated: false))
        #expect(feed.liveAfter == 0)
        let step16 = feed.offer(event(1))
        #expect(step16 == .queued(conflated: false), "the new history's first event")
        feed.addDemand(.unlimited)
        let step17 = drain(&feed)
        #expect(step17.events == ["1", "2", #"reset{"reason":"unknown-id","oldest":null}"#, "1"])
    }

    @Test func presenceFramesGoOnlyToSubscribersThatAskedForThem() {
        var plain = makeFeed()
        var asking = makeFeed(wantsPresence: true)
        _ = plain.join(replay: [], liveAfter: 0, lastControlSerial: ChannelEvent.lastControlSerial)
        _ = asking.join(replay: [], liveAfter: 0, lastControlSerial: ChannelEvent.lastControlSerial)
        let joinFrame = ChannelEvent.presence("join", channel: "c", client: "ann")
        let step18 = plain.offer(joinFrame)
        #expect(step18 == .skipped)
        let step19 = asking.offer(joinFrame)
        #expect(step19 == .queued(conflated: false))
        #expect(plain.waiting == 0 && asking.waiting == 1)
        asking.addDemand(.max(1))
        let step20 = drain(&asking)
        #expect(step20.events == [#"join{"channel":"c","client":"ann"}"#])
    }

    @Test func boundedDemandDeliversThatManyAndTheRestWaits() {
        var feed = makeFeed()
        _ = feed.join(replay: [event(1), event(2), event(3)], liveAfter: 3, lastControlSerial: 0)
        let step21 = drain(&feed)
        #expect(step21.events.isEmpty, "no demand, nothing delivered")
        feed.addDemand(.max(2))
        let drained = drain(&feed)
        #expect(drained.events == ["1", "2"] && drained.delivered == 2)
        #expect(feed.demand == 0 && feed.waiting == 1)
        let step22 = feed.offer(event(4))
        #expect(step22 == .queued(conflated: false))
        feed.addDemand(.max(1))
        let step23 = drain(&feed)
        #expect(step23.events == ["3"])
        #expect(feed.waiting == 1)
    }

    @Test func unlimitedDemandStaysUnlimitedAndACounterThatWouldOverflowSaturates() {
        var unlimited = makeFeed()
        _ = unlimited.join(replay: [event(1), event(2)], liveAfter: 2, lastControlSerial: 0)
        unlimited.addDemand(.unlimited)
        let step24 = drain(&unlimited)
        #expect(step24.events == ["1", "2"])
        #expect(unlimited.demand == Int.max, "unlimited is not counted down")

        var saturated = makeFeed()
        _ = saturated.join(replay: [event(1)], liveAfter: 1, lastControlSerial: 0)
        saturated.addDemand(.max(Int.max - 1))
        saturated.addDemand(.max(5))
        #expect(saturated.demand == Int.max, "the sum saturates instead of trapping")
        let step25 = drain(&saturated)
        #expect(step25.events == ["1"])
        #expect(saturated.demand == Int.max, "and then counts as unlimited")
    }

    @Test func demandTheSubscriberAddsWhileReceivingIsTakenByTheSameDrainInOrder() {
        var feed = makeFeed()
        _ = feed.join(replay: [event(1), event(2), event(3)], liveAfter: 3, lastControlSerial: 0)
        feed.addDemand(.max(1))
        var nestedDrains = 0
        let drained = drain(&feed) { feed, _ in
            // A re-entrant `request`: the shell adds the demand, and its nested drain is refused.
            feed.addDemand(.max(1))
            if feed.beginDrain() { nestedDrains += 1 }
            return .none
        }
        #expect(nestedDrains == 0, "a drain under way refuses a nested one")
        #expect(drained.events == ["1", "2", "3"] && drained.delivered == 3)
        #expect(!feed.draining && feed.demand == 1)
        let returned = drain(&feed) { _, _ in .max(1) }
        #expect(returned.events.isEmpty && feed.demand == 1)
        let step26 = feed.offer(event(4))
        #expect(step26 == .queued(conflated: false))
        let step27 = drain(&feed) { _, _ in .max(1) }
        #expect(step27.events == ["4"])
        #expect(feed.demand == 1, "what receive returns is added as well")
    }

    @Test func aCancelFromInsideReceiveStopsTheDrain() {
        var feed = makeFeed()
        _ = feed.join(replay: [event(1), event(2)], liveAfter: 2, lastControlSerial: 0)
        feed.addDemand(.unlimited)
        var ends: [ChannelFeed.End] = []
        let drained = drain(&feed) { feed, _ in
            ends.append(feed.end())
            return .unlimited
        }
        #expect(drained.events == ["1"])
        #expect(ends == [.ended(leave: true)])
        let step28 = feed.beginDrain()
        #expect(!step28)
    }

    @Test func conflationReplacesTheWaitingEventOfTheSameTypeAndCountsItInTheGap() {
        var feed = makeFeed(conflate: true)
        _ = feed.join(replay: [event(1, type: "price")], liveAfter: 1, lastControlSerial: 0)
        let step29 = feed.offer(event(2, type: "volume"))
        #expect(step29 == .queued(conflated: false))
        let step30 = feed.offer(event(3, type: "price"))
        #expect(step30 == .queued(conflated: false), "the replay is never conflated")
        let step31 = feed.offer(event(4, type: "price"))
        #expect(step31 == .queued(conflated: true))
        let step32 = feed.offer(event(5))
        #expect(step32 == .queued(conflated: false), "an untyped event is not a price")
        #expect(feed.liveWaiting == 3 && feed.missed == 1)
        feed.addDemand(.unlimited)
        let drained = drain(&feed)
        #expect(drained.events == [#"gap{"missed":1,"after":null}"#, "1", "2", "4", "5"])
        #expect(drained.delivered == 4)

        var plain = makeFeed()
        _ = plain.join(replay: [], liveAfter: 0, lastControlSerial: 0)
        let step33 = plain.offer(event(1, type: "price"))
        #expect(step33 == .queued(conflated: false))
        let step34 = plain.offer(event(2, type: "price"))
        #expect(step34 == .queued(conflated: false), "only when asked for")
    }

    @Test func dropOldestDropsPastTheBoundAndTheGapSaysHowManyAfterWhichID() {
        var feed = makeFeed(events: 2, overflow: .dropOldest)
        _ = feed.join(replay: [], liveAfter: 0, lastControlSerial: 0)
        feed.addDemand(.max(1))
        let step35 = feed.offer(event(1))
        #expect(step35 == .queued(conflated: false))
        let step36 = drain(&feed)
        #expect(step36.events == ["1"])
        let step37 = feed.enforceBound()
        #expect(step37 == .within)
        var bounds: [ChannelFeed.Bound] = []
        for sequence: UInt64 in 2...6 {
            _ = feed.offer(event(sequence))
            bounds.append(feed.enforceBound())
        }
        #expect(bounds == [.within, .within, .dropped(1), .dropped(1), .dropped(1)])
        #expect(feed.liveWaiting == 2 && feed.missed == 3 && !feed.hasEnded)
        feed.addDemand(.max(2))
        let drained = drain(&feed)
        #expect(drained.events == [#"gap{"missed":3,"after":"e-1"}"#, "5"], "the gap takes a unit of demand")
        #expect(drained.delivered == 1)
        #expect(feed.missed == 0)
        feed.addDemand(.max(1))
        let step38 = drain(&feed)
        #expect(step38.events == ["6"])
    }

    @Test func dropOldestAppliesTheByteBoundToo() {
        let size = event(1).sse.count
        var feed = makeFeed(bytes: size * 2, overflow: .dropOldest)
        _ = feed.join(replay: [], liveAfter: 0, lastControlSerial: 0)
        _ = offer(&feed, [event(1), event(2)])
        let step39 = feed.enforceBound()
        #expect(step39 == .within)
        _ = feed.offer(event(3))
        let step40 = feed.enforceBound()
        #expect(step40 == .dropped(1))
        #expect(feed.liveWaitingBytes == size * 2)
        feed.addDemand(.unlimited)
        let step41 = drain(&feed)
        #expect(step41.events == [#"gap{"missed":1,"after":null}"#, "2", "3"])
    }

    @Test func disconnectEndsTheFeedPastTheBoundAndNothingIsTakenAfter() {
        var feed = makeFeed(events: 2, overflow: .disconnect)
        _ = feed.join(replay: [], liveAfter: 0, lastControlSerial: 0)
        _ = offer(&feed, [event(1), event(2)])
        let step42 = feed.enforceBound()
        #expect(step42 == .within)
        _ = feed.offer(event(3))
        let step43 = feed.enforceBound()
        #expect(step43 == .disconnect(leave: true))
        #expect(feed.hasEnded && feed.waiting == 0 && feed.liveWaiting == 0)
        let step44 = feed.offer(event(4))
        #expect(step44 == .ended)
        let step45 = feed.enforceBound()
        #expect(step45 == .within, "ended once")
        let step46 = feed.end()
        #expect(step46 == .alreadyEnded)
        feed.addDemand(.unlimited)
        let step47 = drain(&feed)
        #expect(step47.events.isEmpty)
    }

    @Test func endIsOnceLeavesOnlyAfterAJoinAndNothingFollowsIt() {
        var unjoined = makeFeed()
        let step48 = unjoined.end()
        #expect(step48 == .ended(leave: false), "never joined: nothing to leave")
        let step49 = unjoined.join(replay: [event(1)], liveAfter: 1, lastControlSerial: 0)
        #expect(step49 == 0)
        #expect(!unjoined.joined && unjoined.waiting == 0, "a join after the end is ignored")

        var feed = makeFeed()
        _ = feed.join(replay: [event(1)], liveAfter: 1, lastControlSerial: 0)
        _ = feed.offer(event(2))
        let step50 = feed.end()
        #expect(step50 == .ended(leave: true))
        let step51 = feed.end()
        #expect(step51 == .alreadyEnded)
        #expect(feed.waiting == 0, "what waited is let go")
        feed.addDemand(.unlimited)
        let step52 = feed.beginDrain()
        #expect(!step52)
        let step53 = feed.nextDelivery()
        #expect(step53 == nil)
        let step54 = feed.offer(event(3))
        #expect(step54 == .ended)
    }
}
