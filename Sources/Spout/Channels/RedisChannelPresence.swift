import RESP
import Redis

/// How the replicas share presence through Redis (the keys and scripts; pure values and parsers, no connection).
///
/// Under the configured prefix (`spout:` by default):
/// - `replicas`, a sorted set: each replica's id (random, made at start) scored by when its heartbeat lapses
///   (Redis's clock, ms). Each replica refreshes its own score every second to `now + channels.replicaTimeoutSeconds`;
///   a replica whose score has passed is gone (killed, cut off), and the heartbeat script removes it. Its size is
///   the live replicas.
/// - `presence:{name}`, a hash per channel that has subscribers: field a replica id, value that replica's
///   subscribers on the channel (``PresenceEntry``). A replica whose count falls to 0 deletes its field. The key
///   expires `channels.replicaTimeoutSeconds` after the last heartbeat of a replica with a field in it, and the
///   fields of replicas gone are removed by every write and heartbeat that touches the key, so Redis holds presence
///   only for live replicas' channels, a field per live replica.
/// - `presence`, the pub/sub channel on which each write announces `<replica>\n<name>\n<entry>`, so the replicas
///   holding a copy of the channel update their view and send `join` / `leave` at once.
///
/// **Thread safety:** value type; immutable.
extension RedisChannelStore {
    var replicasKey: String { prefix + "replicas" }
    func presenceKey(_ name: String) -> String { prefix + "presence:" + name }
    /// The pub/sub channel of presence changes (a key of the same name is never made).
    var presenceChannel: String { prefix + "presence" }

    /// One replica's subscribers on one channel: how many, and the names the named ones gave.
    struct PresenceEntry: Equatable, Sendable {
        var count: Int
        var clients: [String]

        /// `<count>` then ` <name>` for each (names never hold a space: ``ChannelRoutes/clientName(_:)``).
        var encoded: String {
            ([String(count)] + clients).joined(separator: " ")
        }

        /// Reads ``encoded``; nil for anything else (a negative or absurd count, an empty name).
        init?(encoded text: some StringProtocol) {
            let parts = text.split(separator: " ", omittingEmptySubsequences: false)
            guard let first = parts.first, let count = Int(first), count >= 0, count <= 1 << 40 else { return nil }
            let clients: [String] = parts.dropFirst().map { String($0) }
            guard clients.allSatisfy({ !$0.isEmpty && $0.utf8.count <= ChannelRoutes.maxClientBytes }) else {
                return nil
            }
            self.count = count
            self.clients = clients
        }

        init(count: Int, clients: [String]) {
            self.count = count
            self.clients = clients
        }
    }

    /// `EVAL presenceWrite`: replica `replica`'s `entry` on channel `name` (deleted when its count is 0), announced
    /// on ``presenceChannel``.
    func presenceWriteCommand(
        _ name: String,
        replica: String,
        entry: PresenceEntry,
        lifetimeMilliseconds: Int
    ) -> RESPCommand {
        RESPCommand(
            "EVAL",
            Self.presenceWriteScript,
            "2",
            presenceKey(name),
            replicasKey,
            replica,
            entry.count == 0 ? "" : entry.encoded,
            String(lifetimeMilliseconds),
            presenceChannel,
            name
        )
    }

    /// `EVAL heartbeat`: refreshes `replica`'s score to now + `lifetimeMilliseconds`, removes the replicas whose
    /// score passed, keeps `channels`' presence keys (where `replica` has a field) alive and removes their fields of
    /// replicas gone. Replies the live replicas.
    func heartbeatCommand(replica: String, lifetimeMilliseconds: Int, channels: [String]) -> RESPCommand {
        var command = RESPCommand("EVAL", Self.heartbeatScript, String(1 + channels.count), replicasKey)
        for name in channels { command.append(presenceKey(name)) }
        command.append(replica)
        command.append(String(lifetimeMilliseconds))
        return command
    }

    /// `EVAL presenceLeave`: replica `replica`'s goodbye as it stops: it leaves ``replicasKey`` and its field of
    /// each of `channels`' presence hashes, each field removed announced on ``presenceChannel`` as a count of 0 (so
    /// the other replicas send `leave` for its subscribers at once rather than after its heartbeat lapses).
    func presenceLeaveCommand(replica: String, channels: [String]) -> RESPCommand {
        var command = RESPCommand("EVAL", Self.presenceLeaveScript, String(1 + channels.count), replicasKey)
        for name in channels { command.append(presenceKey(name)) }
        command.append(replica)
        command.append(presenceChannel)
        for name in channels { command.append(name) }
        return command
    }

    /// `EVAL presenceRead`: the live replicas' entries on channel `name`, as replica, entry pairs.
    func presenceReadCommand(_ name: String) -> RESPCommand {
        RESPCommand("EVAL", Self.presenceReadScript, "2", presenceKey(name), replicasKey)
    }

    /// The reply of ``presenceReadCommand(_:)``: entry by replica (unreadable entries skipped); nil for another
    /// shape.
    static func presenceRead(_ value: RESPValue) -> [String: PresenceEntry]? {
        guard let parts = value.withoutAttributes.elements, parts.count % 2 == 0 else { return nil }
        var entries: [String: PresenceEntry] = [:]
        var index = 0
        while index < parts.count {
            if let replica = parts[index].string, let text = parts[index + 1].string,
                let entry = PresenceEntry(encoded: text)
            {
                entries[replica] = entry
            }
            index += 2
        }
        return entries
    }

    /// The reply of ``heartbeatCommand(replica:lifetimeMilliseconds:channels:)``: the live replicas.
    static func liveReplicas(_ value: RESPValue) -> Set<String>? {
        guard let parts = value.withoutAttributes.elements else { return nil }
        return Set(parts.compactMap(\.string))
    }

    /// A message on ``presenceChannel``: who wrote it, for which channel, and its entry (count 0: none).
    static func presenceAnnouncement(_ bytes: [UInt8]) -> (replica: String, name: String, entry: PresenceEntry)? {
        let lines = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 2, omittingEmptySubsequences: false)
        guard lines.count == 3, !lines[0].isEmpty, !lines[1].isEmpty else { return nil }
        let text = String(decoding: lines[2], as: UTF8.self)
        let entry = text.isEmpty ? PresenceEntry(count: 0, clients: []) : PresenceEntry(encoded: text)
        guard let entry else { return nil }
        return (String(decoding: lines[0], as: UTF8.self), String(decoding: lines[1], as: UTF8.self), entry)
    }

    // MARK: Scripts

    /// Lua: `live(id)`, whether replica `id`'s heartbeat has not lapsed (KEYS[2] the replicas' set, `now` set).
    private static let liveLua = """
        local function live(id)
          local score = redis.call('ZSCORE', KEYS[2], id)
          return score and tonumber(score) > now
        end
        """

    /// KEYS: presence hash, replicas. ARGV: replica, entry (empty: none), lifetime ms, pub/sub channel, name. The
    /// first write is `HSET` (or `HDEL`): a full Redis refuses the write before anything changes.
    static let presenceWriteScript = """
        \(Self.clockLua)
        \(Self.liveLua)
        if ARGV[2] == '' then
          redis.call('HDEL', KEYS[1], ARGV[1])
        else
          redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
          redis.call('PEXPIRE', KEYS[1], ARGV[3])
        end
        for _, id in ipairs(redis.call('HKEYS', KEYS[1])) do
          if id ~= ARGV[1] and not live(id) then redis.call('HDEL', KEYS[1], id) end
        end
        redis.call('PUBLISH', ARGV[4], ARGV[1] .. '\\n' .. ARGV[5] .. '\\n' .. ARGV[2])
        return 1
        """

    /// KEYS: replicas, then the presence hashes to keep. ARGV: replica, lifetime ms.
    static let heartbeatScript = """
        \(Self.clockLua)
        redis.call('ZADD', KEYS[1], string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now))
        for i = 2, #KEYS do
          if redis.call('PEXPIRE', KEYS[i], ARGV[2]) == 1 then
            for _, id in ipairs(redis.call('HKEYS', KEYS[i])) do
              if not redis.call('ZSCORE', KEYS[1], id) then redis.call('HDEL', KEYS[i], id) end
            end
          end
        end
        return redis.call('ZRANGE', KEYS[1], 0, -1)
        """

    /// KEYS: replicas, then the presence hashes. ARGV: replica, pub/sub channel, then the hashes' channel names.
    static let presenceLeaveScript = """
        redis.call('ZREM', KEYS[1], ARGV[1])
        for i = 2, #KEYS do
          if redis.call('HDEL', KEYS[i], ARGV[1]) == 1 then
            redis.call('PUBLISH', ARGV[2], ARGV[1] .. '\\n' .. ARGV[i + 1] .. '\\n')
          end
        end
        return 1
        """

    /// KEYS: presence hash, replicas.
    static let presenceReadScript = """
        \(Self.clockLua)
        \(Self.liveLua)
        local out = {}
        local all = redis.call('HGETALL', KEYS[1])
        for i = 1, #all, 2 do
          if live(all[i]) then
            out[#out + 1] = all[i]
            out[#out + 1] = all[i + 1]
          end
        end
        return out
        """
}
