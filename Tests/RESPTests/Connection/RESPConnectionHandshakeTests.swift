import RESP
import Testing

@Suite struct RESPConnectionHandshakeTests {
    @Test func helloThreeThenReady() {
        var harness = MachineHarness()
        #expect(harness.machine.status == .idle)
        #expect(harness.machine.start(now: harness.now) == .connect)
        #expect(harness.machine.status == .connecting)
        #expect(harness.machine.start(now: harness.now) == .none, "starting twice does nothing")
        #expect(harness.machine.connected(now: harness.now) == .write(RESPCommand("HELLO", "3")))
        #expect(harness.machine.status == .handshaking)
        #expect(harness.receive(.helloReply) == [.ready(write: [])])
        #expect(harness.machine.status == .ready)
        #expect(harness.machine.protocolVersion == 3)
    }

    @Test func credentialsNameAndDatabaseGoIntoHelloAndSelect() {
        var harness = MachineHarness(
            .init(username: "alice", password: "s3cret", database: 2, clientName: "spout", pingInterval: nil)
        )
        _ = harness.machine.start(now: harness.now)
        #expect(
            harness.machine.connected(now: harness.now)
                == .write(RESPCommand("HELLO", "3", "AUTH", "alice", "s3cret", "SETNAME", "spout"))
        )
        #expect(harness.receive(.helloReply) == [.write(RESPCommand("SELECT", "2"))])
        #expect(harness.machine.status == .handshaking)
        #expect(harness.receive(.ok) == [.ready(write: [])])
    }

    @Test func aPasswordAloneLogsInAsTheDefaultUser() {
        var harness = MachineHarness(.init(password: "pw", pingInterval: nil))
        _ = harness.machine.start(now: harness.now)
        #expect(
            harness.machine.connected(now: harness.now) == .write(RESPCommand("HELLO", "3", "AUTH", "default", "pw"))
        )
    }

    @Test func aServerWithoutHelloGetsAuthAndRESP2() {
        var harness = MachineHarness(
            .init(username: "alice", password: "pw", database: 1, clientName: "spout", pingInterval: nil)
        )
        _ = harness.machine.start(now: harness.now)
        _ = harness.machine.connected(now: harness.now)
        #expect(
            harness.receive(.error("ERR unknown command 'HELLO', with args beginning with: '3' "))
                == [.write(RESPCommand("AUTH", "alice", "pw"))]
        )
        #expect(harness.machine.protocolVersion == 2)
        #expect(harness.receive(.ok) == [.write(RESPCommand("CLIENT", "SETNAME", "spout"))])
        #expect(harness.receive(.ok) == [.write(RESPCommand("SELECT", "1"))])
        #expect(harness.receive(.ok) == [.ready(write: [])])
    }

    @Test func aServerRefusingRESP3FallsBackToo() {
        var harness = MachineHarness(.init(password: "pw", pingInterval: nil))
        _ = harness.machine.start(now: harness.now)
        _ = harness.machine.connected(now: harness.now)
        #expect(
            harness.receive(.error("NOPROTO sorry, this protocol version is not supported"))
                == [.write(RESPCommand("AUTH", "pw"))]
        )
        #expect(harness.receive(.ok) == [.ready(write: [])])
        #expect(harness.machine.protocolVersion == 2)
    }

    @Test(arguments: ["ERR unknown command 'HELLO', with args beginning with: '3' ", "NOPROTO unsupported protocol"])
    func anOwnerThatNeedsRESP3RefusesAServerWithoutItAndRetries(message: String) {
        let configuration = Machine.Configuration(password: "pw", pingInterval: nil, requiresRESP3: true)
        let harness = refusedHandshake(configuration, helloError: message)
        #expect(
            harness?.error
                == .handshakeFailed(command: "HELLO", message: "\(message) (RESP3 is required: Redis 6 or later)")
        )
        #expect(harness?.machine.protocolVersion != 2)
    }

    @Test func anOwnerThatNeedsRESP3IsReadyWithIt() {
        var harness = MachineHarness(.init(pingInterval: nil, requiresRESP3: true))
        _ = harness.machine.start(now: harness.now)
        _ = harness.machine.connected(now: harness.now)
        #expect(harness.receive(.helloReply) == [.ready(write: [])])
        #expect(harness.machine.protocolVersion == 3)
    }

    @Test func aFallbackWithoutCredentialsIsReadyAtOnce() {
        var harness = MachineHarness()
        _ = harness.machine.start(now: harness.now)
        _ = harness.machine.connected(now: harness.now)
        #expect(harness.receive(.error("ERR unknown command `HELLO`")) == [.ready(write: [])])
        #expect(harness.machine.protocolVersion == 2)
    }

    @Test(arguments: [
        ("HELLO", "WRONGPASS invalid username-password pair or user is disabled."),
        ("HELLO", "NOAUTH HELLO must be called with the client already authenticated"),
    ])
    func aRefusedLoginFailsTheQueuedCommandsAndRetries(command: String, message: String) {
        let refused = refusedHandshake(.init(password: "wrong", pingInterval: nil), helloError: message)
        #expect(refused?.error == .handshakeFailed(command: command, message: message))
    }

    /// Starts a machine with one command queued, answers its `HELLO` with `helloError`, and checks that the
    /// handshake failed that command and waits to reconnect: the machine and the error, or nil (recorded).
    private func refusedHandshake(_ configuration: Machine.Configuration, helloError: String)
        -> (machine: Machine, error: RESPConnectionError)?
    {
        var harness = MachineHarness(configuration)
        _ = harness.machine.start(now: harness.now)
        #expect(harness.send(.get("a"), 1) == .none)
        _ = harness.machine.connected(now: harness.now)
        let actions = harness.receive(.error(helloError))
        guard case .close(let failing, let error, let delay?)? = actions.first, actions.count == 1 else {
            Issue.record("expected a close with reconnect, got \(actions)")
            return nil
        }
        #expect(failing == [1])
        #expect(harness.machine.status == .waitingToReconnect(until: harness.now + delay))
        return (harness.machine, error)
    }

    @Test func aRefusedSelectFailsTheHandshake() {
        var harness = MachineHarness(.init(database: 99, pingInterval: nil))
        _ = harness.connectReady()
        let actions = harness.receive(.error("ERR DB index is out of range"))
        guard case .close(_, let error, _)? = actions.first else {
            Issue.record("expected a close, got \(actions)")
            return
        }
        #expect(error == .handshakeFailed(command: "SELECT", message: "ERR DB index is out of range"))
    }

    @Test func commandsSentWhileConnectingAreWrittenInOrderOnceReady() {
        var harness = MachineHarness()
        #expect(harness.send(.get("before start"), 1) == .none)
        _ = harness.machine.start(now: harness.now)
        #expect(harness.send(.get("connecting"), 2) == .none)
        _ = harness.machine.connected(now: harness.now)
        #expect(harness.send(.get("handshaking"), 3) == .none)
        #expect(harness.machine.waitingCommandCount == 3, "three queued; HELLO is the machine's own")
        #expect(
            harness.receive(.helloReply)
                == [.ready(write: [.get("before start"), .get("connecting"), .get("handshaking")])]
        )
        #expect(
            harness.receive(.bulkString("1"), .bulkString("2"), .bulkString("3"))
                == [.reply(1, .bulkString("1")), .reply(2, .bulkString("2")), .reply(3, .bulkString("3"))]
        )
    }

    @Test func connectingAndTheHandshakeShareOneTimeout() {
        var harness = MachineHarness(.init(connectTimeout: .seconds(2), pingInterval: nil))
        let start = harness.now
        _ = harness.machine.start(now: harness.now)
        #expect(harness.machine.nextDeadline == start + .seconds(2))
        #expect(harness.advance(by: .seconds(1)) == .none)
        _ = harness.machine.connected(now: harness.now)
        #expect(harness.machine.nextDeadline == start + .seconds(2), "the handshake does not restart the clock")
        #expect(harness.send(.get("a"), 7) == .none)
        guard case .close(let failing, let error, .some) = harness.advance(by: .seconds(1)) else {
            Issue.record("expected a close with reconnect")
            return
        }
        #expect(failing == [7])
        #expect(error == .connectTimedOut(limit: .seconds(2)))
    }

    @Test func aSocketThatOpensAfterCloseIsDropped() {
        var harness = MachineHarness()
        _ = harness.machine.start(now: harness.now)
        #expect(harness.machine.close(now: harness.now) == .close(failing: [], error: .closed, reconnectAfter: nil))
        #expect(harness.machine.connected(now: harness.now) == .close(failing: [], error: .closed, reconnectAfter: nil))
        #expect(harness.machine.status == .closed)
    }

    @Test func bytesBeforeTheSocketIsOpenAreIgnored() {
        var harness = MachineHarness()
        _ = harness.machine.start(now: harness.now)
        #expect(harness.receive(.ok).isEmpty)
        _ = harness.machine.connected(now: harness.now)
        #expect(harness.receive(.helloReply) == [.ready(write: [])])
    }
}
