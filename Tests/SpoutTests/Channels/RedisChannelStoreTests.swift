import Foundation
import RESP
import Reactive
import Redis
import Testing

@testable import Spout

/// The Redis layout's parsers (announcements come from the network: no bytes may trap them) and a channel copy
/// fed from Redis: following on, a missing stretch, a lost history.
@Suite struct RedisChannelStoreTests {
    /// An announcement as the publish script writes it.
    static func announcement(_ generation: String, first: UInt64, at: Int64, _ events: [(String, String)]) -> [UInt8] {
        var bytes = Array("\(generation)\n\(first)\n\(at)\n\(events.count)\n".utf8)
        for (type, data) in events {
            bytes += Array("\(type.utf8.count) \(data.utf8.count)\n".utf8) + Array(type.utf8) + Array(data.utf8)
        }
        return bytes
    }

    @Test func anAnnouncementReadsBack() throws {
        let bytes = Self.announcement(
            "abc123",
            first: 41,
            at: 1_700_000_000_123,
            [("", #"{"a":"x\ny"}"#), ("tick", "2")]
        )
        let parsed = try #require(RedisChannelStore.announcement(bytes))
        #expect(parsed.generation == "abc123")
        #expect(parsed.first == 41)
        #expect(parsed.atMilliseconds == 1_700_000_000_123)
        #expect(parsed.events.count == 2)
        #expect(parsed.events[0].type == nil)
        #expect(parsed.events[0].data == Array(#"{"a":"x\ny"}"#.utf8))
        #expect(parsed.events[1].type == "tick")
        #expect(parsed.events[1].data == Array("2".utf8))
    }

    @Test(arguments: [
        "", "\n", "abc\n", "abc\n1\n2\n", "abc\n1\n2\n1\n", "abc\n0\n2\n0\n", "ABC\n1\n2\n0\n", "abc\n-1\n2\n0\n",
        "abc\n1\n2\n-1\n", "abc\n1\n2\n1\n-1 1\nx", "abc\n1\n2\n1\n0 -1\n", "abc\n1\n2\n1\n5 1\nab",
        "abc\n1\n2\n1\n0 5\n12", "abc\n1\n2\n1\n0 1\n12", "abc\n1\n2\n1\n9223372036854775807 1\nx",
        "abc\n1\n2\n1\n1 9223372036854775807\nx", "abc\n1\n2\n99999999999999999999\n",
        "abc\n18446744073709551615\n2\n2\n0 1\n10 1\n2",
        "abc\n1\n2\n1\n0 1 2\n1", "abc\n1\n2\n1\n01\n1", "a-b\n1\n2\n0\n", "abc\n1\n2\n0\nextra",
    ])
    func malformedAnnouncementsAreRefused(_ text: String) {
        #expect(RedisChannelStore.announcement(Array(text.utf8)) == nil, "\(text.debugDescription)")
    }

    @Test func noMutationOfAnAnnouncementTraps() {
        // Deterministic mutations of a valid message: each either parses to something consistent or is refused.
        let valid = Self.announcement("gen", first: 7, at: 5, [("a", "[1,2]"), ("", "true"), ("bb", "null")])
        var seed: UInt64 = 0x5EED
        func next() -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: seed >> 33)
        }
        var parsed = 0
        for _ in 0..<20_000 {
            var bytes = valid
            for _ in 0..<(1 + next() % 3) {
                switch next() % 3 {
                case 0: bytes[next() % bytes.count] = UInt8(truncatingIfNeeded: next())
                case 1: bytes.remove(at: next() % bytes.count)
                default: bytes.insert(UInt8(truncatingIfNeeded: next()), at: next() % (bytes.count + 1))
                }
                if bytes.isEmpty { bytes = [0x0A] }
            }
            if let announcement = RedisChannelStore.announcement(bytes) {
                parsed += 1
                let total = announcement.events.reduce(0) { $0 + ($1.type?.utf8.count ?? 0) + $1.data.count }
                #expect(total <= bytes.count)
            }
        }
        #expect(parsed < 20_000)
    }

    @Test func aPresenceEntryAndItsAnnouncementReadBackAndNothingElseDoes() throws {
        typealias Entry = RedisChannelStore.PresenceEntry
        let entry = Entry(count: 3, clients: ["alice", "b.o-b@x"])
        #expect(entry.encoded == "3 alice b.o-b@x")
        #expect(Entry(encoded: entry.encoded) == entry)
        #expect(Entry(encoded: "0") == Entry(count: 0, clients: []))
        for bad in ["", "-1", "x", "2 ", "2  a", "99999999999999999999", "2 " + String(repeating: "a", count: 65)] {
            #expect(Entry(encoded: bad) == nil, "\(bad)")
        }
        let announced = try #require(RedisChannelStore.presenceAnnouncement(Array("r1\nroom\n2 alice".utf8)))
        #expect(announced.replica == "r1" && announced.name == "room")
        #expect(announced.entry == Entry(count: 2, clients: ["alice"]))
        #expect(RedisChannelStore.presenceAnnouncement(Array("r1\nroom\n".utf8))?.entry == Entry(count: 0, clients: []))
        for bad in ["", "r1", "r1\nroom", "\nroom\n1", "r1\n\n1", "r1\nroom\n-3"] {
            #expect(RedisChannelStore.presenceAnnouncement(Array(bad.utf8)) == nil, "\(bad)")
        }
        // Any bytes: no trap.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0..<40, using: &generator)).map { _ in
                [UInt8(ascii: "\n"), UInt8(ascii: " "), UInt8(ascii: "1"), UInt8(ascii: "a"), 0xFF].randomElement(
                    using: &generator
                )!
            }
            _ = RedisChannelStore.presenceAnnouncement(bytes)
        }
        let reply = RESPValue.array([.bulkString(Array("r1".utf8)), .bulkString(Array("1 bob".utf8))])
        #expect(RedisChannelStore.presenceRead(reply) == ["r1": Entry(count: 1, clients: ["bob"])])
        #expect(RedisChannelStore.presenceRead(.array([.bulkString(Array("r1".utf8))])) == nil)
    }

    @Test func aSnapshotReadsTheScriptsReply() throws {
        let entry = RESPValue.array([
            .bulkString("0-5"),
            .array([
                .bulkString("at"), .bulkString("1000"), .bulkString("d"), .bulkString("{}"), .bulkString("t"),
                .bulkString("x"),
            ]),
        ])
        let reply = RESPValue.array([.bulkString("gen1"), .bulkString("5"), .integer(1500), .array([entry])])
        let snapshot = try #require(RedisChannelStore.snapshot(reply))
        #expect(snapshot.generation == "gen1")
        #expect(snapshot.lastSequence == 5)
        #expect(snapshot.nowMilliseconds == 1500)
        #expect(snapshot.entries.count == 1)
        #expect(snapshot.entries[0].sequence == 5)
        #expect(snapshot.entries[0].type == "x")
        #expect(snapshot.entries[0].data == Array("{}".utf8))
        #expect(snapshot.entries[0].atMilliseconds == 1000)
        // An entry that is not one of ours (another id shape, no data) makes the reply unreadable, not a trap.
        let foreign = RESPValue.array([.bulkString("1700000000000-0"), .array([.bulkString("d"), .bulkString("1")])])
        #expect(
            RedisChannelStore.snapshot(.array([.bulkString("g"), .bulkString("1"), .integer(1), .array([foreign])]))
                == nil
        )
        #expect(RedisChannelStore.snapshot(.integer(3)) == nil)
        #expect(RedisChannelStore.snapshot(.array([.bulkString("g")])) == nil)
        // A channel Redis does not have.
        let none = try #require(
            RedisChannelStore.snapshot(.array([.bulkString(""), .bulkString("0"), .integer(9), .array([])]))
        )
        #expect(none.generation.isEmpty)
    }

    @Test func thePublishReplyNeedsAGenerationAndAPositiveSequence() {
        #expect(RedisChannelStore.publishReply(.array([.bulkString("abc"), .integer(3)]))! == ("abc", 3, false))
        #expect(RedisChannelStore.publishReply(.array([.bulkString("abc"), .integer(0)])) == nil)
        #expect(RedisChannelStore.publishReply(.array([.bulkString("A-B"), .integer(1)])) == nil)
        #expect(RedisChannelStore.publishReply(.bulkString("abc")) == nil)
    }

    @Test func keysAndFollowersAreStable() {
        let store = RedisChannelStore(prefix: "spout:")
        #expect(store.metaKey("news") == "spout:ch:news:meta")
        #expect(store.streamKey("news") == "spout:ch:news:events")
        #expect(store.channelName(pubsub: Array("spout:ch:news".utf8)) == "news")
        #expect(store.channelName(pubsub: Array("other:ch:news".utf8)) == nil)
        #expect(store.channelName(pubsub: Array("spout:ch:".utf8)) == nil)
        // Every replica puts a channel on the same follower.
        #expect(
            RedisChannelBroker.follower(for: "news", count: 2) == RedisChannelBroker.follower(for: "news", count: 2)
        )
        #expect(Set((0..<64).map { RedisChannelBroker.follower(for: "c\($0)", count: 2) }) == [0, 1])
        // Generations are epochs the ids accept.
        for _ in 0..<100 {
            let generation = RedisChannelBroker.newGeneration()
            #expect(generation.count == 10)
            #expect(ChannelEventID("\(generation)-1")?.epoch == generation)
        }
    }

    @Test func redisTimesBecomeMonotonicAgesWithoutTrapping() {
        let now: UInt64 = 5_000_000_000
        let entry = RedisChannelStore.Entry(sequence: 1, type: nil, data: [], atMilliseconds: 1_000)
        #expect(RedisChannelBroker.stored(entry, redisNow: 3_000, now: now).publishedAt == 3_000_000_000)
        // Stored "in the future" (clocks apart): as if just now.
        #expect(RedisChannelBroker.stored(entry, redisNow: 0, now: now).publishedAt == now)
        // Older than this process's clock reaches back, or absurd: the oldest possible.
        #expect(RedisChannelBroker.stored(entry, redisNow: .max, now: now).publishedAt == 0)
        let ancient = RedisChannelStore.Entry(sequence: 1, type: nil, data: [], atMilliseconds: .min)
        #expect(RedisChannelBroker.stored(ancient, redisNow: .max, now: now).publishedAt == 0)
    }
}

/// A replica's copy of a channel (``Channel`` with `mirrorsRedis`), fed as the Redis broker feeds it.
@Suite struct RedisChannelCopyTests {
    final class Received: @unchecked Sendable {
        var events: [ChannelEvent] = []
    }

    static func copy() -> (Channel, Received, AnyCancellable) {
        let channel = Channel(
            name: "c",
            epoch: "",
            history: .init(events: 100, bytes: 1 << 20, ageNanoseconds: .max),
            maxSubscribers: 10,
            mirrorsRedis: true
        )
        let received = Received()
        let cancellable = channel.events.sink { received.events.append($0) }
        return (channel, received, cancellable)
    }

    static func stored(_ sequences: ClosedRange<UInt64>) -> [Channel.Stored] {
        sequences.map { Channel.Stored(sequence: $0, type: nil, data: Array("\($0)".utf8), publishedAt: 1) }
    }

    @Test func eventsFollowOnAndRepeatsAreSkipped() {
        let (channel, received, cancellable) = Self.copy()
        defer { cancellable.cancel() }
        // A copy that held nothing starts wherever Redis's history does.
        #expect(channel.apply(Self.stored(5...7), epoch: "g", now: 2) == .continuous)
        #expect(channel.apply(Self.stored(6...9), epoch: "g", now: 2) == .continuous)
        #expect(received.events.map(\.id) == ["g-5", "g-6", "g-7", "g-8", "g-9"])
        #expect(channel.position == ("g", 9))
        #expect(channel.latest.value?.id == "g-9")
    }

    @Test func aMissingStretchAppliesNothing() {
        let (channel, received, cancellable) = Self.copy()
        defer { cancellable.cancel() }
        channel.apply(Self.stored(1...2), epoch: "g", now: 2)
        #expect(channel.apply(Self.stored(4...5), epoch: "g", now: 2) == .missing(after: 2))
        #expect(received.events.count == 2)
        // Redis no longer has 3: the history breaks (subscribers are told) and the copy goes on from 4.
        channel.breakHistory(reason: .historyTruncated, epoch: "g")
        #expect(channel.apply(Self.stored(4...5), epoch: "g", now: 2) == .continuous)
        #expect(received.events.map(\.id) == ["g-1", "g-2", "", "g-4", "g-5"])
        #expect(received.events[2].live == .gap)
        #expect(String(decoding: received.events[2].sse, as: UTF8.self).contains(#""reason":"history-truncated""#))
        #expect(channel.position == ("g", 5))
    }

    @Test func aNewGenerationRestartsTheCopyOnce() {
        let (channel, received, cancellable) = Self.copy()
        defer { cancellable.cancel() }
        channel.apply(Self.stored(1...3), epoch: "old", now: 2)
        // Redis lost the channel and it was published to again: sequences start over under a new generation.
        channel.apply(Self.stored(1...1), epoch: "new", now: 2)
        #expect(received.events.map(\.id) == ["old-1", "old-2", "old-3", "", "new-1"])
        #expect(received.events[3].live == .restart)
        #expect(String(decoding: received.events[3].sse, as: UTF8.self).contains(#""reason":"unknown-id""#))
        #expect(channel.position == ("new", 1))
        // A channel gone from Redis (empty generation) restarts once; the next generation then starts quietly.
        channel.breakHistory(reason: .unknownID, epoch: "")
        channel.apply(Self.stored(1...1), epoch: "third", now: 2)
        #expect(received.events.map(\.id).suffix(2) == ["", "third-1"])
    }
}
