import Foundation
import TestSupport
import Testing

@testable import Spout

/// Presence shared by the replicas through one real redis-server (issue 30): `GET /channels/{name}/presence` on
/// any replica counts and names every replica's subscribers, `join` / `leave` frames cross replicas, and a replica
/// that dies without a goodbye has its subscribers leave within `channels.replicaTimeoutSeconds` and a second, one that
/// stops gracefully says goodbye (its subscribers leave at once), and while Redis cannot be read the route answers
/// the replica's own view, marked `partial`.
@Suite(.offPool, .enabled(if: RedisServer.testsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct ChannelsRedisPresenceTests {
    /// `GET /channels/{name}/presence` on `server` as (count, clients); nil when it did not answer 200 or the
    /// answer is partial.
    private func presence(_ server: SpoutTestServer, _ name: String) -> (count: Int, clients: [String])? {
        guard let answer = presenceAnswer(server, name), !answer.partial else { return nil }
        return (answer.count, answer.clients)
    }

    /// `GET /channels/{name}/presence` on `server` as (count, clients, partial); nil when it did not answer 200.
    private func presenceAnswer(
        _ server: SpoutTestServer,
        _ name: String
    ) -> (count: Int, clients: [String], partial: Bool)? {
        guard let response = try? server.get("/channels/\(name)/presence"), response.status == 200,
            let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any],
            object["channel"] as? String == name,
            let count = object["count"] as? Int, let clients = object["clients"] as? [String],
            let partial = object["partial"] as? Bool
        else { return nil }
        return (count, clients, partial)
    }

    /// Waits until `watcher`'s replica holds a live copy of "hall", whose presence it read as the copy was made: an
    /// event published there reached the watcher (published again each second: one published before the watcher
    /// joined the loading copy is not its to get). A client that joins elsewhere before that read is in its reply,
    /// without a `join` frame, as documented; so the tests' clients come after this.
    private func awaitLive(_ watcher: StreamClient, on server: SpoutTestServer) throws {
        let publisher = try ChannelHTTP(port: server.port)
        defer { publisher.close() }
        for _ in 0..<60 {
            _ = try publisher.publishIDs("hall", channelBody([0]))
            if try watcher.multiFrames(1, within: .seconds(1)).contains(where: { $0.type == "message" }) { return }
        }
        Issue.record("the watcher's copy of hall never went live")
    }

    /// The next `count` presence frames (`join`, `leave`) on `watcher` within `within`, skipping events (more than
    /// one of ``awaitLive(_:on:)``'s may have come).
    private func presenceFrames(_ watcher: StreamClient, _ count: Int, within: Duration) throws -> [MultiFrame] {
        let deadline = ContinuousClock.now + TestTiming.scaled(within)
        var found: [MultiFrame] = []
        while found.count < count, ContinuousClock.now < deadline {
            found += try watcher.multiFrames(1, within: .seconds(1)).filter { $0.type != "message" }
        }
        return found
    }

    @Test func everyReplicaCountsAndNamesEveryReplicasSubscribersAndTheirJoinsAndLeavesCross() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let a = try await SpoutTestServer.replica(redisPort: redis.port)
        let b = try await SpoutTestServer.replica(redisPort: redis.port)
        // A watcher on A that asked for presence frames.
        let watcher = try StreamClient.multi(["room"], port: a.port, query: "&presence=true")
        defer { watcher.close() }
        #expect(eventually { self.presence(b, "room")?.count == 1 }, "B counts A's watcher")

        // alice subscribes on B: A's watcher hears her join, and both replicas count and name her.
        let aliceOnB = try StreamClient.channel("room", port: b.port, query: "?client=alice")
        #expect(aliceOnB.status == 200)
        let joined = try watcher.multiFrames(1)
        #expect(joined.map(\.type) == ["join"])
        #expect(joined.first?.object["client"] as? String == "alice")
        #expect(joined.first?.channel == "room")
        for replica in [a, b] {
            #expect(
                eventually { self.presence(replica, "room").map { $0.count == 2 && $0.clients == ["alice"] } == true }
            )
        }

        // alice opens a second tab, on A: no second join. bob and an anonymous subscriber come on B.
        let aliceOnA = try StreamClient.channel("room", port: a.port, query: "?client=alice")
        let bobOnB = try StreamClient.multi(["room"], port: b.port, query: "&client=bob")
        let anonymousOnB = try StreamClient.channel("room", port: b.port)
        defer { anonymousOnB.close() }
        for replica in [a, b] {
            #expect(
                eventually {
                    self.presence(replica, "room").map { $0.count == 5 && $0.clients == ["alice", "bob"] } == true
                }
            )
        }
        // alice's tab on B closes: she is still on A, so no leave; bob leaves B: his leave reaches A.
        aliceOnB.close()
        #expect(eventually { self.presence(a, "room")?.count == 4 })
        bobOnB.close()
        let frames = try watcher.multiFrames(2)
        #expect(frames.map(\.type) == ["join", "leave"], "\(frames)")
        #expect(frames.map { $0.object["client"] as? String } == ["bob", "bob"])
        #expect(eventually { self.presence(b, "room").map { $0.count == 3 && $0.clients == ["alice"] } == true })
        // alice's last tab (on A) closes: she leaves, and B sees her gone.
        aliceOnA.close()
        let left = try watcher.multiFrames(1)
        #expect(left.map(\.type) == ["leave"])
        #expect(left.first?.object["client"] as? String == "alice")
        #expect(eventually { self.presence(b, "room").map { $0.count == 2 && $0.clients == [] } == true })

        // A replica with no subscriber to the channel reads it from Redis too.
        #expect(presence(b, "nobody-here").map { $0.count == 0 && $0.clients.isEmpty } == true)
        await a.stop()
        await b.stop()
    }

    @Test func aReplicaCutOffWithoutAGoodbyeHasItsSubscribersLeaveWithinTheBound() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let link = try RedisLinkProxy(targetPort: redis.port)
        defer { link.stop() }
        let timeout = 3
        let survivor = try await SpoutTestServer.replica(redisPort: redis.port) {
            $0.channels.replicaTimeoutSeconds = timeout
        }
        let doomed = try await SpoutTestServer.replica(redisPort: link.port) {
            $0.channels.replicaTimeoutSeconds = timeout
        }
        let watcher = try StreamClient.channel("hall", port: survivor.port, query: "?presence=true&client=watcher")
        defer { watcher.close() }
        try awaitLive(watcher, on: survivor)
        let carol = try StreamClient.multi(["hall"], port: doomed.port, query: "&client=carol")
        let dave = try StreamClient.channel("hall", port: doomed.port, query: "?client=dave")
        defer {
            carol.close()
            dave.close()
        }
        let joins = try presenceFrames(watcher, 2, within: .seconds(30))
        #expect(Set(joins.map { $0.object["client"] as? String }) == ["carol", "dave"])
        #expect(eventually { self.presence(survivor, "hall")?.count == 3 })
        #expect(try redis.command(["ZCARD", "spout:replicas"]) == ":2")

        // The doomed replica loses Redis at once, with no goodbye (its subscribers stay connected to it).
        let cutAt = ContinuousClock.now
        #expect(link.cut())
        let leaves = try presenceFrames(watcher, 2, within: .seconds(timeout + 10))
        let elapsed = ContinuousClock.now - cutAt
        #expect(leaves.map(\.type) == ["leave", "leave"], "\(leaves)")
        #expect(leaves.map { $0.object["client"] as? String } == ["carol", "dave"])
        // Its heartbeat lapses `timeout` after the last one (at most a second before the cut); the survivor's next
        // heartbeat (a second apart) sees it. Slack for a loaded machine.
        #expect(elapsed <= TestTiming.scaled(.seconds(timeout + 1) + .seconds(2)), "left after \(elapsed)")
        #expect(elapsed >= .seconds(timeout - 1), "not before its heartbeat lapsed: \(elapsed)")
        #expect(presence(survivor, "hall").map { $0.count == 1 && $0.clients == ["watcher"] } == true)
        // Redis forgets the dead replica: the set holds the survivor only, and the channel's hash its field only.
        #expect(eventually { (try? redis.command(["ZCARD", "spout:replicas"])) == ":1" })
        #expect(eventually { (try? redis.command(["HLEN", "spout:presence:hall"])) == ":1" })
        await survivor.stop()
        await doomed.stop()
    }

    /// A graceful stop (the drain that `SIGTERM` starts) says goodbye: once its streams have ended the replica
    /// leaves the shared presence, so the survivor's watcher gets the leaves and Redis holds nothing of it when the
    /// stop returns, long before its heartbeat (60 s here) would have lapsed.
    @Test func aReplicaThatStopsGracefullyTakesItsSubscribersOutAtOnce() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let timeout = 60
        let survivor = try await SpoutTestServer.replica(redisPort: redis.port) {
            $0.channels.replicaTimeoutSeconds = timeout
        }
        let leaving = try await SpoutTestServer.replica(redisPort: redis.port) {
            $0.channels.replicaTimeoutSeconds = timeout
        }
        let watcher = try StreamClient.channel("hall", port: survivor.port, query: "?presence=true&client=watcher")
        defer { watcher.close() }
        try awaitLive(watcher, on: survivor)
        let carol = try StreamClient.multi(["hall"], port: leaving.port, query: "&client=carol")
        let dave = try StreamClient.channel("hall", port: leaving.port, query: "?client=dave")
        defer {
            carol.close()
            dave.close()
        }
        let joins = try presenceFrames(watcher, 2, within: .seconds(30))
        #expect(Set(joins.map { $0.object["client"] as? String }) == ["carol", "dave"])
        #expect(eventually { self.presence(survivor, "hall")?.count == 3 })
        #expect(try redis.command(["ZCARD", "spout:replicas"]) == ":2")

        await leaving.stop()
        // Redis holds nothing of the stopped replica once its stop returned.
        #expect(try redis.command(["ZCARD", "spout:replicas"]) == ":1")
        #expect(try redis.command(["HLEN", "spout:presence:hall"]) == ":1")
        // The survivor's watcher hears both leave (well within the 60 s heartbeat bound), and it counts itself only.
        let leaves = try presenceFrames(watcher, 2, within: .seconds(20))
        #expect(leaves.map(\.type) == ["leave", "leave"], "\(leaves)")
        #expect(Set(leaves.map { $0.object["client"] as? String }) == ["carol", "dave"])
        #expect(
            eventually { self.presence(survivor, "hall").map { $0.count == 1 && $0.clients == ["watcher"] } == true }
        )
        await survivor.stop()
    }

    /// While Redis cannot be read, the route answers what the replica knows, marked partial: its own subscribers
    /// and the others' as last announced to it; once Redis is back, the whole view again.
    @Test func whileRedisIsDownThePresenceIsTheReplicasOwnViewMarkedPartial() async throws {
        let redis = try RedisServer.start()
        defer { redis.stop() }
        let link = try RedisLinkProxy(targetPort: redis.port)
        defer { link.stop() }
        let other = try await SpoutTestServer.replica(redisPort: redis.port)
        let cutOff = try await SpoutTestServer.replica(redisPort: link.port)
        let alice = try StreamClient.channel("room", port: cutOff.port, query: "?client=alice")
        let bob = try StreamClient.channel("room", port: other.port, query: "?client=bob")
        defer {
            alice.close()
            bob.close()
        }
        #expect(
            eventually {
                self.presence(cutOff, "room").map { $0.count == 2 && $0.clients == ["alice", "bob"] } == true
            }
        )
        #expect(link.cut())
        // Not a 503: alice (its own) and bob (as other announced him), partial.
        #expect(
            eventually {
                self.presenceAnswer(cutOff, "room").map {
                    $0.partial && $0.count == 2 && $0.clients == ["alice", "bob"]
                } == true
            }
        )
        // A channel it holds no copy of: its own view is nobody, partial too.
        #expect(presenceAnswer(cutOff, "elsewhere").map { $0.partial && $0.count == 0 && $0.clients.isEmpty } == true)
        // The replica on Redis answers the whole view, not partial.
        #expect(presenceAnswer(other, "room").map { !$0.partial } == true)
        link.restore()
        #expect(eventually { self.presence(cutOff, "room").map { $0.count == 2 } == true })
        await cutOff.stop()
        await other.stop()
    }
}
