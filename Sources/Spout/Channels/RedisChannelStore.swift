import RESP
import Redis

/// How channels are laid out in Redis, and the Lua scripts that read and write them; pure values and parsers, no
/// connection.
///
/// Per channel `name`, under the configured prefix (`spout:` by default):
/// - `ch:{name}:meta`, a hash: `gen`, the channel's generation in this Redis (a random base-36 token made by the
///   first publish, the epoch of its ids), and `seq`, the last sequence given out;
/// - `ch:{name}:events`, a stream holding the history: entry id `0-<seq>`, fields `at` (Redis's clock, ms), `d`
///   (the data, compact JSON) and `t` (the event type, when given); trimmed to about `channels.historyEvents`;
/// - `ch:{name}`, the pub/sub channel each publish announces its events on;
/// - `channels`, a sorted set of channel names by last publish time (for listing and `channels.maxChannels`), and the
///   pub/sub channel on which the publish that makes a channel's generation announces its name (for the patterns
///   of `GET /subscribe`);
/// - `idem:{name}:{key}`, a string per `Idempotency-Key` used on the channel: `<fingerprint>\n<gen>\n<first>\n<count>`,
///   stored by the publish script with the events and expiring `channels.idempotencyWindowSeconds` later, so a
///   retry on any replica (or on one started later) finds it.
///
/// Both keys of a channel expire `channels.historySeconds` after its last publish, so Redis holds nothing for a
/// channel nobody publishes to. A Redis that lost the keys (restarted without persistence, flushed) gets a new
/// generation at the next publish, so ids from before are recognised as strangers (`event: reset`,
/// `unknown-id`) rather than misread.
///
/// Each publish is one script: atomic, so a batch is stored whole or not at all, sequences are consecutive, and
/// the pub/sub message goes out in the same order as the stream's entries.
///
/// **Thread safety:** value type; immutable.
struct RedisChannelStore: Sendable {
    let prefix: String

    /// What every key and pub/sub channel of a channel starts with.
    var channelPrefix: String { prefix + "ch:" }
    func metaKey(_ name: String) -> String { channelPrefix + name + ":meta" }
    func streamKey(_ name: String) -> String { channelPrefix + name + ":events" }
    func pubsubChannel(_ name: String) -> String { channelPrefix + name }
    var indexKey: String { prefix + "channels" }
    /// The pub/sub channel the publish script announces each new channel (a new generation) on, its name as the
    /// message: the index key's name (pub/sub channels and keys are apart in Redis).
    var creationChannel: String { indexKey }
    func idempotencyKey(_ name: String, key: String) -> String { prefix + "idem:" + name + ":" + key }

    /// The channel name of a pub/sub channel of this store, or nil.
    func channelName(pubsub channel: [UInt8]) -> String? {
        let head = Array(channelPrefix.utf8)
        guard channel.count > head.count, channel.starts(with: head) else { return nil }
        return String(decoding: channel[head.count...], as: UTF8.self)
    }

    // MARK: Publishing

    /// An `Idempotency-Key` as the publish script checks and stores it.
    struct Idempotency: Sendable, Equatable {
        let key: String
        /// The request's fingerprint (``ChannelIdempotency/fingerprint(_:)``).
        let fingerprint: String
    }

    /// `EVAL publish`: stores `items` on `name` and announces them. Refuses a new channel past `maxChannels`.
    /// With `idempotency`, a key stored before answers its ids instead (publishing nothing), or is refused when
    /// its fingerprint differs; a new one is stored with the events.
    func publishCommand(
        _ items: [ChannelPublication],
        on name: String,
        generation: String,
        limits: SpoutConfiguration.Channels,
        idempotency: Idempotency? = nil
    ) -> RESPCommand {
        var command = RESPCommand("EVAL", Self.publishScript, idempotency == nil ? "3" : "4")
        command.append(metaKey(name))
        command.append(streamKey(name))
        command.append(indexKey)
        if let idempotency { command.append(idempotencyKey(name, key: idempotency.key)) }
        command.append(generation)
        command.append(max(0, limits.historyEvents))
        command.append(Self.expiryMilliseconds(limits))
        command.append(limits.maxChannels)
        command.append(name)
        command.append(pubsubChannel(name))
        command.append(items.count)
        command.append(idempotency?.fingerprint ?? "")
        command.append(Self.idempotencyMilliseconds(limits))
        for item in items {
            command.append(item.type ?? "")
            command.append(item.data)
        }
        return command
    }

    /// How long a channel's keys outlive its last publish: the history's age limit, at least a second.
    static func expiryMilliseconds(_ limits: SpoutConfiguration.Channels) -> Int {
        keyLifetimeMilliseconds(limits.historySeconds)
    }

    /// How long an `Idempotency-Key` is kept: `channels.idempotencyWindowSeconds`, at least a second.
    static func idempotencyMilliseconds(_ limits: SpoutConfiguration.Channels) -> Int {
        keyLifetimeMilliseconds(limits.idempotencyWindowSeconds)
    }

    /// `seconds` as a key's `PX`: whole milliseconds, at least a second, at most 10^15 (and a second for a value
    /// that is not finite).
    private static func keyLifetimeMilliseconds(_ seconds: Double) -> Int {
        let milliseconds = (seconds * 1000).rounded()
        return milliseconds.isFinite ? Int(max(1000, min(milliseconds, 1e15))) : 1000
    }

    /// The error message prefix of a publish refused at `maxChannels`.
    static let tooManyChannelsMarker = "SPOUTFULL"
    /// The error message prefix of a publish whose `Idempotency-Key` was used with another body.
    static let keyReusedMarker = "SPOUTKEYREUSED"

    /// The reply of the publish script: the generation and the first sequence of the batch, and whether they are
    /// an earlier publish's (an `Idempotency-Key` seen before: nothing was published now).
    static func publishReply(_ value: RESPValue) -> (generation: String, first: UInt64, repeated: Bool)? {
        guard let parts = value.withoutAttributes.elements, parts.count == 2 || parts.count == 3,
            let generation = parts[0].string, ChannelEventID("\(generation)-1") != nil,
            let first = parts[1].integer, first > 0
        else { return nil }
        return (generation, UInt64(first), parts.count == 3)
    }

    // MARK: Reading

    /// `EVAL read`: the generation, the last sequence, Redis's clock and up to `count` entries after sequence
    /// `after` (all held when nil). A channel Redis does not have answers an empty generation.
    func readCommand(_ name: String, after: UInt64?, count: Int) -> RESPCommand {
        var command = RESPCommand("EVAL", Self.readScript, "2", metaKey(name), streamKey(name))
        command.append(after.map { "(0-\($0)" } ?? "-")
        command.append(max(1, count))
        return command
    }

    /// What the read script answered.
    struct Snapshot {
        /// Empty when Redis has no such channel.
        var generation: String
        var lastSequence: UInt64
        /// Redis's clock, milliseconds since 1970.
        var nowMilliseconds: Int64
        var entries: [Entry]
    }

    /// One stored event.
    struct Entry {
        var sequence: UInt64
        var type: String?
        var data: [UInt8]
        /// When Redis stored it, milliseconds since 1970.
        var atMilliseconds: Int64
    }

    static func snapshot(_ value: RESPValue) -> Snapshot? {
        guard let parts = value.withoutAttributes.elements, parts.count == 4,
            let generation = parts[0].string,
            let sequence = parts[1].string.flatMap({ UInt64($0) }) ?? parts[1].integer.map({ UInt64(max(0, $0)) }),
            let now = parts[2].integer,
            let list = RedisStreamEntry.list(parts[3])
        else { return nil }
        var entries: [Entry] = []
        entries.reserveCapacity(list.count)
        for item in list {
            guard let entry = Entry(item) else { return nil }
            entries.append(entry)
        }
        return Snapshot(generation: generation, lastSequence: sequence, nowMilliseconds: now, entries: entries)
    }

    /// `EVAL latest`: the generation, Redis's clock and the newest entry (or none).
    func latestCommand(_ name: String) -> RESPCommand {
        RESPCommand("EVAL", Self.latestScript, "2", metaKey(name), streamKey(name))
    }

    /// `EVAL list`: for each channel that published within the expiry, its name, generation, last sequence,
    /// entries held and bytes Redis uses for them; at most `limit` channels, by name.
    func listCommand(limit: Int, limits: SpoutConfiguration.Channels) -> RESPCommand {
        var command = RESPCommand("EVAL", Self.listScript, "1", indexKey)
        command.append(channelPrefix)
        command.append(Self.expiryMilliseconds(limits))
        command.append(max(1, limit))
        return command
    }

    /// One channel as the list script describes it.
    struct Listing {
        var name: String
        var generation: String
        var lastSequence: UInt64
        var entries: Int
        var bytes: Int
    }

    static func listing(_ value: RESPValue) -> [Listing]? {
        guard let flat = value.withoutAttributes.elements, flat.count % 5 == 0 else { return nil }
        var result: [Listing] = []
        var index = 0
        while index < flat.count {
            guard let name = flat[index].string, let generation = flat[index + 1].string else { return nil }
            let sequence = flat[index + 2].string.flatMap { UInt64($0) } ?? 0
            result.append(
                Listing(
                    name: name,
                    generation: generation,
                    lastSequence: sequence,
                    entries: Int(clamping: flat[index + 3].integer ?? 0),
                    bytes: Int(clamping: flat[index + 4].integer ?? 0)
                )
            )
            index += 5
        }
        return result
    }

    // MARK: Announcements

    /// One publish as its pub/sub message carries it: `gen\nfirst\nat\ncount\n`, then per event
    /// `<type bytes> <data bytes>\n<type><data>`.
    struct Announcement {
        var generation: String
        var first: UInt64
        var atMilliseconds: Int64
        var events: [(type: String?, data: [UInt8])]
    }

    /// Parses an announcement; nil for anything malformed (never traps, whatever the bytes).
    static func announcement(_ bytes: [UInt8]) -> Announcement? {
        var position = 0
        func line() -> Substring? {
            guard let end = bytes[position...].firstIndex(of: 0x0A) else { return nil }
            defer { position = end + 1 }
            return Substring(decoding: bytes[position..<end], as: UTF8.self)
        }
        guard let generation = line(), ChannelEventID("\(generation)-1") != nil,
            let first = line().flatMap({ UInt64($0) }), first > 0,
            let at = line().flatMap({ Int64($0) }),
            let count = line().flatMap({ Int($0) }), count >= 0, count <= bytes.count
        else { return nil }
        var events: [(type: String?, data: [UInt8])] = []
        events.reserveCapacity(count)
        for _ in 0..<count {
            guard let sizes = line() else { return nil }
            let parts = sizes.split(separator: " ")
            guard parts.count == 2, let typeLength = Int(parts[0]), let dataLength = Int(parts[1]),
                typeLength >= 0, dataLength >= 0,
                typeLength <= bytes.count - position, dataLength <= bytes.count - position - typeLength
            else { return nil }
            let type = String(decoding: bytes[position..<(position + typeLength)], as: UTF8.self)
            position += typeLength
            events.append((typeLength == 0 ? nil : type, Array(bytes[position..<(position + dataLength)])))
            position += dataLength
        }
        guard position == bytes.count, first.addingReportingOverflow(UInt64(count)).overflow == false else {
            return nil
        }
        return Announcement(generation: String(generation), first: first, atMilliseconds: at, events: events)
    }

    // MARK: Scripts

    /// Lua: `now`, Redis's clock in milliseconds since 1970 (one clock for every replica's stores).
    static let clockLua = """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        """

    /// KEYS: meta, stream, index, and the `Idempotency-Key`'s key when the publish has one. ARGV: generation for a
    /// new channel, history events, expiry ms, max channels, name, pub/sub channel, count, fingerprint, the key's
    /// expiry ms, then type and data of each event. Numbers are written with `%.0f`: Lua's `tostring` would write
    /// large ones in exponent form.
    ///
    /// A key found answers the ids it stored (and a third element, `repeat`) before anything is written, or an
    /// error when its fingerprint differs; a new key is stored last, with the events, so a publish and its key
    /// exist together or not at all.
    ///
    /// The first write is `HSET` or `HINCRBY`, commands Redis refuses over `maxmemory`: a Redis that is full
    /// refuses the whole publish (and Spout answers 503). A script's writes after its first are never refused,
    /// so one that began with a write Redis lets through when full (`ZREMRANGEBYSCORE`, `DEL`) would store
    /// everything after it.
    static let publishScript = """
        if KEYS[4] then
          local prior = redis.call('GET', KEYS[4])
          if prior then
            local seen, pgen, pfirst = string.match(prior, '^([^\\n]*)\\n([^\\n]*)\\n([0-9]+)\\n')
            if seen ~= ARGV[8] then
              return redis.error_reply('SPOUTKEYREUSED the Idempotency-Key was used with another body')
            end
            return {pgen, tonumber(pfirst), 'repeat'}
          end
        end
        local gen = redis.call('HGET', KEYS[1], 'gen')
        \(Self.clockLua)
        local stamp = string.format('%.0f', now)
        local expired = string.format('%.0f', now - tonumber(ARGV[3]))
        if not gen then
          if not redis.call('ZSCORE', KEYS[3], ARGV[5]) then
            local live = redis.call('ZCARD', KEYS[3]) - redis.call('ZCOUNT', KEYS[3], '-inf', expired)
            if live >= tonumber(ARGV[4]) then
              return redis.error_reply('SPOUTFULL the service has its most channels')
            end
          end
          gen = ARGV[1]
          redis.call('HSET', KEYS[1], 'gen', gen, 'seq', 0)
          redis.call('DEL', KEYS[2])
          redis.call('PUBLISH', KEYS[3], ARGV[5])
        end
        local n = tonumber(ARGV[7])
        local last = redis.call('HINCRBY', KEYS[1], 'seq', ARGV[7])
        local first = last - n + 1
        local parts = {gen, '\\n', string.format('%.0f', first), '\\n', stamp, '\\n', ARGV[7], '\\n'}
        for i = 0, n - 1 do
          local kind = ARGV[10 + 2 * i]
          local data = ARGV[11 + 2 * i]
          local id = '0-' .. string.format('%.0f', first + i)
          if kind == '' then
            redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], id, 'at', stamp, 'd', data)
          else
            redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], id, 'at', stamp, 'd', data, 't', kind)
          end
          parts[#parts + 1] = string.format('%d %d\\n', #kind, #data) .. kind .. data
        end
        redis.call('PEXPIRE', KEYS[1], ARGV[3])
        redis.call('PEXPIRE', KEYS[2], ARGV[3])
        redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', expired)
        redis.call('ZADD', KEYS[3], stamp, ARGV[5])
        redis.call('PUBLISH', ARGV[6], table.concat(parts))
        if KEYS[4] then
          local record = ARGV[8] .. '\\n' .. gen .. '\\n' .. string.format('%.0f', first) .. '\\n' .. ARGV[7]
          redis.call('SET', KEYS[4], record, 'PX', ARGV[9])
        end
        return {gen, first}
        """

    /// KEYS: meta, stream. ARGV: XRANGE start (`-` or `(0-<seq>`), count.
    static let readScript = """
        \(Self.clockLua)
        local meta = redis.call('HMGET', KEYS[1], 'gen', 'seq')
        if not meta[1] then return {'', '0', now, {}} end
        return {meta[1], meta[2] or '0', now, redis.call('XRANGE', KEYS[2], ARGV[1], '+', 'COUNT', ARGV[2])}
        """

    /// KEYS: meta, stream.
    static let latestScript = """
        \(Self.clockLua)
        local gen = redis.call('HGET', KEYS[1], 'gen')
        if not gen then return {'', '0', now, {}} end
        return {gen, '0', now, redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)}
        """

    /// KEYS: index. ARGV: key prefix of channels, expiry ms, limit.
    static let listScript = """
        \(Self.clockLua)
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now - tonumber(ARGV[2])))
        local names = redis.call('ZRANGE', KEYS[1], 0, -1)
        table.sort(names)
        local out = {}
        for i = 1, math.min(#names, tonumber(ARGV[3])) do
          local name = names[i]
          local meta = redis.call('HMGET', ARGV[1] .. name .. ':meta', 'gen', 'seq')
          local stream = ARGV[1] .. name .. ':events'
          local memory = redis.pcall('MEMORY', 'USAGE', stream)
          if type(memory) ~= 'number' then memory = 0 end
          out[#out + 1] = name
          out[#out + 1] = meta[1] or ''
          out[#out + 1] = meta[2] or '0'
          out[#out + 1] = redis.call('XLEN', stream)
          out[#out + 1] = memory
        end
        return out
        """
}

extension RedisChannelStore.Entry {
    /// Reads a stream entry `0-<seq>` with its fields; nil for another shape.
    init?(_ entry: RedisStreamEntry) {
        let id = entry.id.utf8
        guard id.starts(with: "0-".utf8), let sequence = UInt64(entry.id.dropFirst(2)), sequence > 0,
            let data = entry[field: "d"]
        else { return nil }
        self.sequence = sequence
        self.data = data
        self.type = entry[field: "t"].map { String(decoding: $0, as: UTF8.self) }
        self.atMilliseconds = entry[field: "at"].flatMap { Int64(String(decoding: $0, as: UTF8.self)) } ?? 0
    }
}
