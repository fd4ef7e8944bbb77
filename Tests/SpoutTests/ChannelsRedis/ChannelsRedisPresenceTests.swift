import Foundation
import TestSupport
import Testing

@testable import Spout

/// Presence shared by the replicas through one real redis-server (issue 30): `GET /channels/{name}/presence` on
/// any replica counts and names every replica's subscribers, `join` / `leave` frames cross replicas, and a replica
/// that dies without a goodbye has its subscribers leave within `channels.replicaTimeoutSeconds` and a second.
@Suite(.offPool, .enabled(if: RedisServer.testsEnabled), .timeLimit(.minutes(3 * TestTiming.scale)))
struct ChannelsRedisPresenceTests {
    /// `GET /channels/{name}/presence` on `server` as (count, clients); nil when it did not answer 200.
    private func presence(_ server: SpoutTestServer, _ name: String) -> (count: Int, clients: [String])? {
        guard let response = try? server.get("/channels/\(name)/presence"), response.status == 200,
            let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any],
            object["channel"] as? String == name,
            let count = object["count"] as? Int, let clients = object["clients"] as? [String]
        else { return nil }
        return (count, clients)
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
        let carol = try StreamClient.multi(["hall"], port: doomed.port, query: "&client=carol")
        let dave = try StreamClient.channel("hall", port: doomed.port, query: "?client=dave")
        defer {
            carol.close()
            dave.close()
        }
        let joins = try watcher.multiFrames(2)
        #expect(Set(joins.map { $0.object["client"] as? String }) == ["carol", "dave"])
        #expect(eventually { self.presence(survivor, "hall")?.count == 3 })
        #expect(try redis.command(["ZCARD", "spout:replicas"]) == ":2")

        // The doomed replica loses Redis at once, with no goodbye (its subscribers stay connected to it).
        let cutAt = ContinuousClock.now
        #expect(link.cut())
        let leaves = try watcher.multiFrames(2, within: .seconds(timeout + 10))
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
}
