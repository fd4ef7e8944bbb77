import RESP
import Testing

@Suite struct RESPConnectionPipelineTests {
    @Test func repliesMatchCommandsInOrderAndErrorRepliesAreReplies() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        #expect(harness.send(RESPCommand("SET", "k", "v"), 1) == .write(RESPCommand("SET", "k", "v")))
        #expect(harness.send(.get("k"), 2) == .write(.get("k")))
        #expect(harness.send(RESPCommand("INCR", "k"), 3) == .write(RESPCommand("INCR", "k")))
        #expect(harness.machine.waitingCommandCount == 3)
        #expect(
            harness.receive(.ok, .bulkString("v"), .error("ERR value is not an integer or out of range"))
                == [
                    .reply(1, .ok), .reply(2, .bulkString("v")),
                    .reply(3, .error("ERR value is not an integer or out of range")),
                ]
        )
        #expect(harness.machine.waitingCommandCount == 0)
    }

    @Test func aReplyArrivingByteByByteCompletesOnItsLastByte() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("XRANGE", "s", "-", "+"), 1)
        let reply = RESPValue.array([.array([.bulkString("1-0"), .array([.bulkString("d"), .bulkString("x")])])])
        let bytes = reply.encoded
        for byte in bytes.dropLast() {
            #expect(harness.receive(bytes: [byte]).isEmpty)
        }
        #expect(harness.receive(bytes: [bytes.last!]) == [.reply(1, reply)])
    }

    @Test func rawBytesFeedTheSameWay() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(.get("k"), 1)
        RESPValue.bulkString("v").encoded.withUnsafeBytes { harness.machine.bytesReceived($0, now: harness.now) }
        #expect(harness.machine.nextReceivedAction(now: harness.now) == .reply(1, .bulkString("v")))
        #expect(harness.machine.nextReceivedAction(now: harness.now) == nil)
    }

    @Test func attributesStayOnTheReply() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(.get("k"), 1)
        let reply = RESPValue.attribute([.init(.simpleString("ttl"), .integer(5))], .bulkString("v"))
        #expect(harness.receive(reply) == [.reply(1, reply)])
    }

    @Test func aReplyNobodyWaitsForClosesTheConnection() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        let actions = harness.receive(.ok)
        guard case .close(let failing, .unexpectedReply("OK"), .some)? = actions.first else {
            Issue.record("expected a close, got \(actions)")
            return
        }
        #expect(failing.isEmpty)
        _ = harness.fireAtDeadline()
        _ = harness.machine.connected(now: harness.now)
        _ = harness.receive(.helloReply)
        let large = RESPValue.array(Array(repeating: .bulkString("x"), count: 100_000))
        guard case .close(_, .unexpectedReply("an array of 100000 elements"), _)? = harness.receive(large).first else {
            Issue.record("a large unexpected reply is named briefly")
            return
        }
    }

    @Test func garbageMidPipelineFailsTheRestAfterTheGoodReplies() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        for id in 1...3 {
            _ = harness.send(.get("k\(id)"), id)
        }
        let actions = harness.receive(bytes: RESPValue.bulkString("one").encoded + "$2\r\nabc\r\n".bytes)
        #expect(
            actions == [
                .reply(1, .bulkString("one")),
                .close(failing: [2, 3], error: .protocolViolation(.invalidBulkTerminator), reconnectAfter: delay(1)),
            ]
        )
        #expect(harness.machine.waitingCommandCount == 0)
    }

    @Test func aLostConnectionFailsEveryWaitingCommandThenReconnects() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(.get("a"), 1)
        _ = harness.send(.get("b"), 2)
        #expect(harness.receive(.bulkString("a")) == [.reply(1, .bulkString("a"))])
        let closed = harness.machine.connectionClosed("read: connection reset by peer", now: harness.now)
        #expect(
            closed
                == .close(
                    failing: [2],
                    error: .connectionLost("read: connection reset by peer"),
                    reconnectAfter: delay(1)
                )
        )
        #expect(harness.machine.connectionClosed("again", now: harness.now) == .none, "reported twice")

        #expect(harness.send(.get("c"), 3) == .fail(3, .notConnected), "nothing queues behind an outage")
        #expect(harness.machine.nextReceivedAction(now: harness.now) == nil)
        #expect(harness.fireAtDeadline() == .connect)
        #expect(harness.machine.status == .connecting)
        #expect(harness.send(.get("d"), 4) == .none, "queued while connecting")
        _ = harness.machine.connected(now: harness.now)
        #expect(harness.receive(.helloReply) == [.ready(write: [.get("d")])])
        #expect(harness.machine.consecutiveFailures == 0)
    }

    @Test func aBadReplyFromTheLastConnectionDoesNotReachTheNext() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(.get("a"), 1)
        harness.machine.bytesReceived("$5\r\nhel".bytes, now: harness.now)
        _ = harness.machine.connectionClosed("eof", now: harness.now)
        _ = harness.fireAtDeadline()
        _ = harness.machine.connected(now: harness.now)
        #expect(harness.receive(.helloReply) == [.ready(write: [])], "the half reply was dropped with its socket")
    }

    @Test func theOldestCommandMustBeAnsweredWithinItsTimeout() {
        var harness = MachineHarness(.init(commandTimeout: .seconds(5), pingInterval: nil))
        _ = harness.connectReady()
        let sent = harness.now
        _ = harness.send(.get("a"), 1)
        harness.now = sent + .seconds(1)
        _ = harness.send(.get("b"), 2)
        #expect(harness.machine.nextDeadline == sent + .seconds(5))
        #expect(harness.advance(by: .seconds(3)) == .none, "fired early")
        #expect(
            harness.advance(by: .seconds(1))
                == .close(failing: [1, 2], error: .timedOut(limit: .seconds(5)), reconnectAfter: delay(1))
        )
    }

    @Test func eachReplyRestartsTheClockForTheNextCommand() {
        var harness = MachineHarness(.init(commandTimeout: .seconds(5), pingInterval: nil))
        _ = harness.connectReady()
        let sent = harness.now
        _ = harness.send(.get("a"), 1)
        _ = harness.send(.get("b"), 2)
        harness.now = sent + .seconds(4)
        #expect(harness.receive(.bulkString("a")) == [.reply(1, .bulkString("a"))])
        #expect(harness.machine.nextDeadline == sent + .seconds(9))
        #expect(harness.advance(by: .seconds(4)) == .none)
        #expect(harness.receive(.bulkString("b")) == [.reply(2, .bulkString("b"))])
        #expect(harness.machine.nextDeadline == nil, "nothing waits and pings are off")
    }

    @Test func aCommandMayCarryItsOwnTimeoutOrNone() {
        var harness = MachineHarness(.init(commandTimeout: .seconds(5), pingInterval: nil))
        _ = harness.connectReady()
        let sent = harness.now
        _ = harness.send(RESPCommand("XREAD", "BLOCK", "30000", "STREAMS", "s", "$"), 1, timeout: .some(.seconds(35)))
        #expect(harness.machine.nextDeadline == sent + .seconds(35))
        #expect(harness.receive(.array(nil)) == [.reply(1, .array(nil))])
        _ = harness.send(RESPCommand("BLPOP", "q", "0"), 2, timeout: .some(nil))
        #expect(harness.machine.nextDeadline == nil)
        #expect(harness.advance(by: .seconds(3600)) == .none)
    }

    @Test func anIdleConnectionPingsAndAnUnansweredPingClosesIt() {
        var harness = MachineHarness(.init(commandTimeout: .seconds(2), pingInterval: .seconds(10)))
        _ = harness.connectReady()
        let ready = harness.now
        #expect(harness.machine.nextDeadline == ready + .seconds(10))
        #expect(harness.fireAtDeadline() == .write(RESPCommand("PING")))
        #expect(harness.machine.nextDeadline == ready + .seconds(12))
        harness.now = ready + .seconds(11)
        #expect(harness.receive(.simpleString("PONG")) == [.none], "the pong is nobody's reply")
        #expect(harness.machine.nextDeadline == ready + .seconds(21))
        #expect(harness.fireAtDeadline() == .write(RESPCommand("PING")))
        #expect(
            harness.advance(by: .seconds(2))
                == .close(failing: [], error: .timedOut(limit: .seconds(2)), reconnectAfter: delay(1))
        )
    }

    @Test func receivingAnythingPostponesThePing() {
        var harness = MachineHarness(.init(pingInterval: .seconds(10)))
        _ = harness.connectReady()
        let ready = harness.now
        harness.now = ready + .seconds(8)
        #expect(harness.receive(.message("a", "x")) == [.push(.message(channel: "a".bytes, payload: "x".bytes))])
        #expect(harness.machine.nextDeadline == ready + .seconds(18))
    }

    @Test func pendingCommandsAreBounded() {
        var harness = MachineHarness(.init(pingInterval: nil, maxPendingCommands: 2))
        #expect(harness.send(.get("a"), 1) == .none)
        #expect(harness.send(.get("b"), 2) == .none)
        #expect(harness.send(.get("c"), 3) == .fail(3, .tooManyPendingCommands(limit: 2)))
        _ = harness.machine.start(now: harness.now)
        _ = harness.machine.connected(now: harness.now)
        #expect(harness.receive(.helloReply) == [.ready(write: [.get("a"), .get("b")])])
        #expect(harness.send(.get("d"), 4) == .fail(4, .tooManyPendingCommands(limit: 2)))
        _ = harness.receive(.null)
        #expect(harness.send(.get("e"), 5) == .write(.get("e")))
    }

    @Test func theMachinesOwnCommandsDoNotCountAgainstTheLimit() {
        var harness = MachineHarness(.init(database: 2, pingInterval: .seconds(10), maxPendingCommands: 2))
        _ = harness.machine.start(now: harness.now)
        #expect(harness.machine.connected(now: harness.now) == .write(RESPCommand("HELLO", "3")))
        // HELLO is in flight: the owner still has its two.
        #expect(harness.send(.get("a"), 1) == .none)
        #expect(harness.send(.get("b"), 2) == .none)
        #expect(harness.machine.waitingCommandCount == 2)
        #expect(harness.send(.get("c"), 3) == .fail(3, .tooManyPendingCommands(limit: 2)))
        #expect(harness.receive(.helloReply) == [.write(RESPCommand("SELECT", "2"))])
        #expect(harness.receive(.ok) == [.ready(write: [.get("a"), .get("b")])])
        #expect(harness.receive(.null, .null) == [.reply(1, .null), .reply(2, .null)])
        // A keep-alive PING in flight leaves room for two as well.
        #expect(harness.fireAtDeadline() == .write(RESPCommand("PING")))
        #expect(harness.send(.get("d"), 4) == .write(.get("d")))
        #expect(harness.send(.get("e"), 5) == .write(.get("e")))
        #expect(harness.send(.get("f"), 6) == .fail(6, .tooManyPendingCommands(limit: 2)))
        #expect(harness.receive(.simpleString("PONG"), .null) == [.none, .reply(4, .null)])
        #expect(harness.machine.waitingCommandCount == 1)
    }

    @Test func closingFailsEverythingAndIsFinal() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(.get("a"), 1)
        #expect(harness.machine.close(now: harness.now) == .close(failing: [1], error: .closed, reconnectAfter: nil))
        #expect(harness.machine.status == .closed)
        #expect(harness.machine.close(now: harness.now) == .none)
        #expect(harness.send(.get("b"), 2) == .fail(2, .closed))
        #expect(harness.machine.nextDeadline == nil)
        #expect(harness.machine.connectionClosed("late", now: harness.now) == .none)
        #expect(harness.receive(.ok).isEmpty)
        #expect(harness.machine.start(now: harness.now) == .none)
    }
}

/// The delay seed 1 gives after the `failure`-th failure with the default policy.
func delay(_ failure: Int, seed: UInt64 = 1) -> Duration {
    var probe = Machine(configuration: .init(pingInterval: nil), seed: seed)
    var now = ContinuousClock.now
    var result = Duration.zero
    for _ in 0..<failure {
        _ = probe.start(now: now)
        if case .waitingToReconnect(let until) = probe.status {
            now = until
            _ = probe.timerFired(now: now)
        }
        if case .close(_, _, let delay?) = probe.connectionClosed("probe", now: now) {
            result = delay
        }
    }
    return result
}
