import RESP
import Reactive

/// Typed calls for what the channels over Redis use: streams (`XADD` with a cap, `XRANGE`, `XREVRANGE`,
/// `XREAD BLOCK`) and pub/sub (`PUBLISH`, `SUBSCRIBE`, `UNSUBSCRIBE`). Each is ``RedisConnection/send(_:)`` with
/// the reply read into a Swift type; a reply of another shape fails with ``RedisError/unexpectedReply(_:)``. The
/// futures are fulfilled on the connection's loop.
extension RedisConnection {
    /// `XADD key [MAXLEN ~ maxLength] id field value …`: appends an entry, trimming the stream to about
    /// `maxLength` entries (`~`: Redis trims whole nodes, cheaply, so a few more may stay).
    ///
    /// - Parameter id: The entry id; `*` (the default) lets Redis choose.
    /// - Returns: The new entry's id.
    public func xadd(
        _ key: String,
        id: String = "*",
        maxLength: Int? = nil,
        fields: [RedisStreamField]
    ) -> Future<String, RedisError> {
        var command = RESPCommand("XADD", key)
        if let maxLength {
            command.append("MAXLEN")
            command.append("~")
            command.append(max(0, maxLength))
        }
        command.append(id)
        for field in fields {
            command.append(field.name)
            command.append(field.value)
        }
        return typed(command) { $0.string }
    }

    /// `XRANGE key start end [COUNT count]`: entries from `start` to `end` inclusive, oldest first. `-` and `+`
    /// are the ends of the stream; `(id` excludes `id`.
    public func xrange(_ key: String, from start: String = "-", to end: String = "+", count: Int? = nil)
        -> Future<[RedisStreamEntry], RedisError>
    {
        typed(RedisConnection.rangeCommand("XRANGE", key, start, end, count)) { RedisStreamEntry.list($0) }
    }

    /// `XREVRANGE key end start [COUNT count]`: entries from `end` down to `start` inclusive, newest first.
    public func xrevrange(_ key: String, from end: String = "+", to start: String = "-", count: Int? = nil)
        -> Future<[RedisStreamEntry], RedisError>
    {
        typed(RedisConnection.rangeCommand("XREVRANGE", key, end, start, count)) { RedisStreamEntry.list($0) }
    }

    /// `XREAD [COUNT count] [BLOCK ms] STREAMS key … id …`: the entries after each id (`$`: after the last one
    /// now). With `block`, waits up to that long for one (zero: forever) and answers empty when none came.
    ///
    /// A blocking read holds the connection's pipeline until it returns: use a connection of its own. Its reply
    /// timeout is `block` plus ``RedisConfiguration/commandTimeout``, at least 1 s of it (Redis ends blocks on its
    /// own timer, 10 times a second by default, so the empty reply may come a little late); none when either is
    /// unbounded.
    public func xread(_ streams: [(key: String, after: String)], count: Int? = nil, block: Duration? = nil)
        -> Future<[RedisStreamRead], RedisError>
    {
        var command = RESPCommand("XREAD")
        if let count {
            command.append("COUNT")
            command.append(max(1, count))
        }
        var timeout = configuration.commandTimeout
        if let block {
            let (seconds, attoseconds) = max(.zero, block).components
            let milliseconds = seconds.multipliedReportingOverflow(by: 1000)
            let total =
                milliseconds.overflow ? Int64.max : milliseconds.partialValue &+ attoseconds / 1_000_000_000_000_000
            command.append("BLOCK")
            command.append(Int(total))
            timeout = total == 0 ? nil : timeout.map { block + max($0, .seconds(1)) }
        }
        command.append("STREAMS")
        for stream in streams { command.append(stream.key) }
        for stream in streams { command.append(stream.after) }
        return Future { promise in
            self.send(command, timeout: timeout, measured: block == nil, on: nil) { result in
                promise(RedisConnection.read(result) { RedisStreamRead.list($0) })
            }
        }
    }

    /// `PUBLISH channel payload`: how many subscribers (on this server) received it.
    public func publish(_ channel: String, _ payload: [UInt8]) -> Future<Int, RedisError> {
        var command = RESPCommand("PUBLISH", channel)
        command.append(payload)
        return typed(command) { $0.integer.map { Int($0) } }
    }

    /// `SUBSCRIBE channel …`: completes once the server confirmed every channel. The messages arrive on
    /// ``pushes`` as ``RESPPush/message(channel:payload:)``; the subscriptions are restored after every reconnect.
    public func subscribe(_ channels: [String]) -> Future<Void, RedisError> {
        typed(RESPCommand("SUBSCRIBE", arguments: channels)) { _ in () }
    }

    /// `UNSUBSCRIBE channel …` (every channel when empty).
    public func unsubscribe(_ channels: [String]) -> Future<Void, RedisError> {
        typed(RESPCommand("UNSUBSCRIBE", arguments: channels)) { _ in () }
    }

    // MARK: - Helpers

    private func typed<T>(_ command: RESPCommand, _ read: @escaping @Sendable (RESPValue) -> T?) -> Future<
        T, RedisError
    > {
        Future { promise in
            self.send(command) { result in
                promise(RedisConnection.read(result, read))
            }
        }
    }

    static func read<T>(_ result: Result<RESPValue, RedisError>, _ read: (RESPValue) -> T?) -> Result<T, RedisError> {
        switch result {
        case .success(let value):
            guard let typed = read(value) else { return .failure(.unexpectedReply(value.briefDescription)) }
            return .success(typed)
        case .failure(let error):
            return .failure(error)
        }
    }

    private static func rangeCommand(_ name: String, _ key: String, _ first: String, _ second: String, _ count: Int?)
        -> RESPCommand
    {
        var command = RESPCommand(name, key, first, second)
        if let count {
            command.append("COUNT")
            command.append(max(1, count))
        }
        return command
    }
}
