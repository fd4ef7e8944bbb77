import RESP

typealias Machine = RESPConnectionStateMachine<Int>
typealias Action = Machine.Action

/// Drives a state machine in virtual time: `now` moves only when a test moves it.
struct MachineHarness {
    var machine: Machine
    var now: ContinuousClock.Instant

    init(_ configuration: Machine.Configuration = Machine.Configuration(pingInterval: nil), seed: UInt64 = 1) {
        machine = Machine(configuration: configuration, seed: seed)
        now = ContinuousClock.now
    }

    /// Feeds the wire form of `values` in one read and returns every action they complete (`.none`s included).
    mutating func receive(_ values: RESPValue...) -> [Action] {
        receive(bytes: values.flatMap(\.encoded))
    }

    /// Feeds `bytes` in one read and returns every action they complete.
    mutating func receive(bytes: [UInt8]) -> [Action] {
        machine.bytesReceived(bytes, now: now)
        var actions: [Action] = []
        while let action = machine.nextReceivedAction(now: now) {
            actions.append(action)
        }
        return actions
    }

    mutating func send(_ command: RESPCommand, _ context: Int, timeout: Duration?? = nil) -> Action {
        if let timeout {
            return machine.send(command, context: context, timeout: timeout, now: now)
        }
        return machine.send(command, context: context, now: now)
    }

    /// Moves virtual time on by `duration` and fires the timer.
    mutating func advance(by duration: Duration) -> Action {
        now = now + duration
        return machine.timerFired(now: now)
    }

    /// Moves virtual time to the machine's next deadline and fires the timer there.
    mutating func fireAtDeadline() -> Action? {
        guard let deadline = machine.nextDeadline else { return nil }
        now = max(now, deadline)
        return machine.timerFired(now: now)
    }

    /// Starts, connects and answers `HELLO 3` as Redis 7 does; the machine is then ready.
    mutating func connectReady() -> [Action] {
        var actions = [machine.start(now: now), machine.connected(now: now)]
        actions += receive(RESPValue.helloReply)
        return actions
    }
}

extension RESPValue {
    /// What Redis 7 answers to `HELLO 3` (shortened).
    static let helloReply = RESPValue.map([
        .init(.bulkString("server"), .bulkString("redis")),
        .init(.bulkString("version"), .bulkString("7.0.15")),
        .init(.bulkString("proto"), .integer(3)),
    ])

    static let ok = RESPValue.simpleString("OK")

    /// A RESP3 pub/sub push: `kind`, then the rest as bulk strings (or an integer count).
    static func pubsub(_ kind: String, _ name: String?, _ count: Int64) -> RESPValue {
        .push([.bulkString(kind), name.map { .bulkString($0) } ?? .bulkString(nil), .integer(count)])
    }

    static func message(_ channel: String, _ payload: String) -> RESPValue {
        .push([.bulkString("message"), .bulkString(channel), .bulkString(payload)])
    }
}

extension RESPCommand {
    static func get(_ key: String) -> RESPCommand { RESPCommand("GET", key) }
}
