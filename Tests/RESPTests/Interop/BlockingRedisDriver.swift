import RESP
import TestSupport

/// A test-only owner for ``RESPConnectionStateMachine`` over a plain blocking loopback socket: it carries out the
/// machine's actions and records what they deliver. Not the product's transport (that one runs on the event loops);
/// this is the thinnest owner that lets the machine talk to a real Redis.
///
/// Reads block with a deadline (``LoopbackClient``). While the machine waits to reconnect there is no socket to
/// wait on, so the driver jumps its clock to the machine's deadline instead of sleeping (virtual time for the
/// backoff; real time for everything on the wire).
///
/// **Ownership:** Owned by one test.
/// **Thread safety:** Not thread-safe; the test's own thread (tests using it are `.offPool`).
final class BlockingRedisDriver {
    private(set) var machine: RESPConnectionStateMachine<Int>
    let port: Int
    private var client: LoopbackClient?
    private var nextID = 0
    /// Replies by command id.
    private(set) var replies: [Int: RESPValue] = [:]
    /// Failures by command id.
    private(set) var failures: [Int: RESPConnectionError] = [:]
    /// Pushes, in arrival order.
    private(set) var pushes: [RESPPush] = []
    /// The errors the connection was closed with, in order.
    private(set) var closes: [RESPConnectionError] = []
    /// How often the connection became ready.
    private(set) var readyCount = 0
    /// The clock, ahead of the real one by every backoff skipped.
    private var skipped = Duration.zero

    init(port: Int, configuration: RESPConnectionStateMachine<Int>.Configuration, seed: UInt64 = 42) {
        self.port = port
        machine = RESPConnectionStateMachine(configuration: configuration, seed: seed)
        perform(machine.start(now: now))
    }

    deinit {
        client?.close()
    }

    var now: ContinuousClock.Instant { ContinuousClock.now + skipped }

    /// Sends `command` and returns its id.
    @discardableResult
    func send(_ command: RESPCommand, timeout: Duration?? = nil) -> Int {
        nextID += 1
        if let timeout {
            perform(machine.send(command, context: nextID, timeout: timeout, now: now))
        } else {
            perform(machine.send(command, context: nextID, now: now))
        }
        return nextID
    }

    /// Sends `command` and waits for its reply.
    func request(_ command: RESPCommand, timeout: Duration = .seconds(5)) throws -> RESPValue {
        let id = send(command)
        try pump(until: "the reply to \(command)", timeout: timeout) { $0.replies[id] != nil || $0.failures[id] != nil }
        if let failure = failures[id] {
            throw failure
        }
        return replies[id]!
    }

    /// Carries out actions, reads, and fires timers until `done` holds or `timeout` (scaled by ``TestTiming``) passes.
    /// Reads wait exactly until the machine's next deadline: scaling them would let a reply overtake a timer.
    func pump(until what: String, timeout: Duration = .seconds(5), _ done: (BlockingRedisDriver) -> Bool) throws {
        let giveUp = ContinuousClock.now + TestTiming.scaled(timeout)
        while !done(self) {
            let realNow = ContinuousClock.now
            guard realNow < giveUp else { throw DriverFailure.timedOut(what) }
            guard let client else {
                // No socket: the machine waits to reconnect (or is closed). Jump to its deadline.
                guard let deadline = machine.nextDeadline else { throw DriverFailure.stuck(what, machine.status) }
                if deadline > now { skipped += deadline - now }
                perform(machine.timerFired(now: now))
                continue
            }
            var wait = giveUp - realNow
            if let deadline = machine.nextDeadline {
                wait = min(wait, max(.milliseconds(1), deadline - now))
            }
            let bytes: [UInt8]
            do {
                bytes = try client.readSome(exactly: wait)
            } catch LoopbackClient.Failure.timedOut {
                perform(machine.timerFired(now: now))
                continue
            } catch {
                perform(machine.connectionClosed("\(error)", now: now))
                continue
            }
            if bytes.isEmpty {
                perform(machine.connectionClosed("end of stream", now: now))
                continue
            }
            machine.bytesReceived(bytes, now: now)
            while let action = machine.nextReceivedAction(now: now) {
                perform(action)
            }
        }
    }

    func close() {
        perform(machine.close(now: now))
    }

    private func perform(_ action: RESPConnectionStateMachine<Int>.Action) {
        switch action {
        case .none:
            break
        case .connect:
            do {
                client = try LoopbackClient(port: port)
                perform(machine.connected(now: now))
            } catch {
                perform(machine.connectionClosed("connect: \(error)", now: now))
            }
        case .write(let command):
            write([command])
        case .writeAll(let commands):
            write(commands)
        case .ready(let commands):
            readyCount += 1
            write(commands)
        case .reply(let id, let value):
            replies[id] = value
        case .fail(let id, let error):
            failures[id] = error
        case .push(let push):
            pushes.append(push)
        case .close(let failing, let error, _):
            client?.close()
            client = nil
            closes.append(error)
            for id in failing {
                failures[id] = error
            }
        }
    }

    private func write(_ commands: [RESPCommand]) {
        guard let client, !commands.isEmpty else { return }
        var bytes: [UInt8] = []
        for command in commands {
            command.write(into: &bytes)
        }
        do {
            try client.send(bytes)
        } catch {
            perform(machine.connectionClosed("write: \(error)", now: now))
        }
    }
}

enum DriverFailure: Error, CustomStringConvertible {
    case timedOut(String)
    case stuck(String, RESPConnectionStateMachine<Int>.Status)

    var description: String {
        switch self {
        case .timedOut(let what): return "timed out waiting for \(what)"
        case .stuck(let what, let status): return "no socket and no deadline (\(status)) while waiting for \(what)"
        }
    }
}
