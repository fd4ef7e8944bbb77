import RESP
import Testing

@Suite struct RESPConnectionSubscriberTests {
    @Test func subscribeCompletesOnceEveryChannelIsConfirmedWithMessagesInBetween() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        #expect(harness.send(RESPCommand("SUBSCRIBE", "a", "b"), 1) == .write(RESPCommand("SUBSCRIBE", "a", "b")))
        #expect(harness.machine.subscriptions.channels == ["a".bytes, "b".bytes])
        let first = RESPValue.pubsub("subscribe", "a", 1)
        let second = RESPValue.pubsub("subscribe", "b", 2)
        #expect(
            harness.receive(first, .message("a", "early"), second)
                == [
                    .none,
                    .push(.message(channel: "a".bytes, payload: "early".bytes)),
                    .reply(1, .array([first, second])),
                ]
        )
    }

    @Test func commandsInterleaveWithPushesUnderRESP3() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("SUBSCRIBE", "news"), 1)
        _ = harness.send(.get("k"), 2)
        _ = harness.send(RESPCommand("PUBLISH", "news", "x"), 3)
        #expect(
            harness.receive(
                .pubsub("subscribe", "news", 1),
                .message("news", "1"),
                .bulkString("v"),
                .message("news", "x"),
                .integer(1)
            )
                == [
                    .reply(1, .array([.pubsub("subscribe", "news", 1)])),
                    .push(.message(channel: "news".bytes, payload: "1".bytes)),
                    .reply(2, .bulkString("v")),
                    .push(.message(channel: "news".bytes, payload: "x".bytes)),
                    .reply(3, .integer(1)),
                ]
        )
    }

    @Test func unsubscribeWithoutChannelsWaitsForOneConfirmationPerSubscription() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("SUBSCRIBE", "a", "b", "c"), 1)
        _ = harness.receive(.pubsub("subscribe", "a", 1), .pubsub("subscribe", "b", 2), .pubsub("subscribe", "c", 3))
        _ = harness.send(RESPCommand("UNSUBSCRIBE"), 2)
        #expect(harness.machine.subscriptions.isEmpty)
        let confirmations: [RESPValue] = [
            .pubsub("unsubscribe", "c", 2), .pubsub("unsubscribe", "a", 1), .pubsub("unsubscribe", "b", 0),
        ]
        #expect(harness.receive(confirmations[0], confirmations[1]) == [.none, .none])
        #expect(harness.receive(confirmations[2]) == [.reply(2, .array(confirmations))])
    }

    @Test func unsubscribeWithNothingSubscribedWaitsForTheOneNilConfirmation() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("unsubscribe"), 1)
        let confirmation = RESPValue.pubsub("unsubscribe", nil, 0)
        #expect(harness.receive(confirmation) == [.reply(1, .array([confirmation]))])
    }

    @Test func namedUnsubscribeConfirmsEachNameEvenUnknownOnes() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("SUBSCRIBE", "a"), 1)
        _ = harness.receive(.pubsub("subscribe", "a", 1))
        _ = harness.send(RESPCommand("UNSUBSCRIBE", "a", "never"), 2)
        #expect(harness.machine.subscriptions.channels.isEmpty)
        let confirmations: [RESPValue] = [.pubsub("unsubscribe", "a", 0), .pubsub("unsubscribe", "never", 0)]
        #expect(harness.receive(confirmations[0], confirmations[1]) == [.none, .reply(2, .array(confirmations))])
    }

    @Test func patternAndShardSubscriptionsDeliverTheirOwnMessages() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("PSUBSCRIBE", "news.*"), 1)
        _ = harness.send(RESPCommand("SSUBSCRIBE", "shard"), 2)
        #expect(harness.machine.subscriptions.patterns == ["news.*".bytes])
        #expect(harness.machine.subscriptions.shardChannels == ["shard".bytes])
        let pattern = RESPValue.pubsub("psubscribe", "news.*", 1)
        let shard = RESPValue.pubsub("ssubscribe", "shard", 1)
        let pmessage = RESPValue.push([
            .bulkString("pmessage"), .bulkString("news.*"), .bulkString("news.eu"), .bulkString("hi"),
        ])
        let smessage = RESPValue.push([.bulkString("smessage"), .bulkString("shard"), .bulkString("s")])
        #expect(
            harness.receive(pattern, pmessage, shard, smessage)
                == [
                    .reply(1, .array([pattern])),
                    .push(.patternMessage(pattern: "news.*".bytes, channel: "news.eu".bytes, payload: "hi".bytes)),
                    .reply(2, .array([shard])),
                    .push(.shardMessage(channel: "shard".bytes, payload: "s".bytes)),
                ]
        )
    }

    @Test func anErrorReplyCompletesASubscribeCommand() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("SSUBSCRIBE", "a", "b"), 1)
        let error = RESPValue.error("CROSSSLOT Keys in request don't hash to the same slot")
        #expect(harness.receive(error) == [.reply(1, error)])
        _ = harness.send(.get("k"), 2)
        #expect(harness.receive(.null) == [.reply(2, .null)])
    }

    @Test func subscribeWithoutChannelsIsAnOrdinaryCommand() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("SUBSCRIBE"), 1)
        let error = RESPValue.error("ERR wrong number of arguments for 'subscribe' command")
        #expect(harness.receive(error) == [.reply(1, error)])
        #expect(harness.machine.subscriptions.isEmpty)
    }

    @Test func otherPushesAndUnaskedConfirmationsArePassedOn() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        let invalidate = RESPValue.push([.bulkString("invalidate"), .array([.bulkString("k")])])
        let unasked = RESPValue.pubsub("sunsubscribe", "moved", 0)
        let malformed = RESPValue.push([.bulkString("message"), .integer(1)])
        #expect(
            harness.receive(invalidate, unasked, malformed)
                == [.push(.other(invalidate)), .push(.other(unasked)), .push(.other(malformed))]
        )
    }

    @Test func aValueOtherThanAConfirmationWhileOneIsAwaitedClosesTheConnection() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("SUBSCRIBE", "a"), 1)
        let actions = harness.receive(.integer(1))
        let expected = RESPConnectionError.unexpectedReply("(integer) 1 instead of a confirmation")
        guard case .close(let failing, expected, .some)? = actions.first else {
            Issue.record("expected a close, got \(actions)")
            return
        }
        #expect(failing == [1])
    }

    @Test func resp2SubscriberModeTellsMessagesFromRepliesByTheirFirstElement() {
        var harness = MachineHarness()
        _ = harness.machine.start(now: harness.now)
        _ = harness.machine.connected(now: harness.now)
        _ = harness.receive(.error("ERR unknown command 'HELLO'"))
        #expect(harness.machine.protocolVersion == 2)

        // Not subscribed: an array that starts with "message" is just a reply.
        _ = harness.send(RESPCommand("LRANGE", "l", "0", "-1"), 1)
        let list = RESPValue.array([.bulkString("message"), .bulkString("a"), .bulkString("b")])
        #expect(harness.receive(list) == [.reply(1, list)])

        _ = harness.send(RESPCommand("SUBSCRIBE", "a"), 2)
        let confirmation = RESPValue.array([.bulkString("subscribe"), .bulkString("a"), .integer(1)])
        let message = RESPValue.array([.bulkString("message"), .bulkString("a"), .bulkString("hi")])
        #expect(
            harness.receive(confirmation, message)
                == [.reply(2, .array([confirmation])), .push(.message(channel: "a".bytes, payload: "hi".bytes))]
        )

        _ = harness.send(RESPCommand("PING"), 3)
        let pong = RESPValue.array([.bulkString("pong"), .bulkString("")])
        #expect(
            harness.receive(message, pong) == [
                .push(.message(channel: "a".bytes, payload: "hi".bytes)), .reply(3, pong),
            ]
        )

        _ = harness.send(RESPCommand("UNSUBSCRIBE", "a"), 4)
        let gone = RESPValue.array([.bulkString("unsubscribe"), .bulkString("a"), .integer(0)])
        #expect(
            harness.receive(message, gone) == [
                .push(.message(channel: "a".bytes, payload: "hi".bytes)), .reply(4, .array([gone])),
            ]
        )

        _ = harness.send(RESPCommand("LRANGE", "l", "0", "-1"), 5)
        #expect(harness.receive(list) == [.reply(5, list)], "a reply again once nothing is subscribed")
    }

    @Test func subscriptionsAreRestoredBeforeTheConnectionIsReadyAgain() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("SUBSCRIBE", "b", "a"), 1)
        _ = harness.send(RESPCommand("PSUBSCRIBE", "p.*"), 2)
        _ = harness.receive(.pubsub("subscribe", "b", 1), .pubsub("subscribe", "a", 2), .pubsub("psubscribe", "p.*", 3))
        _ = harness.machine.connectionClosed("eof", now: harness.now)
        #expect(harness.fireAtDeadline() == .connect)
        #expect(harness.send(.get("k"), 3) == .none)
        _ = harness.machine.connected(now: harness.now)
        #expect(
            harness.receive(.helloReply)
                == [.writeAll([RESPCommand("SUBSCRIBE", "a", "b"), RESPCommand("PSUBSCRIBE", "p.*")])]
        )
        #expect(harness.machine.status == .handshaking)
        #expect(
            harness.receive(.pubsub("subscribe", "a", 1), .message("a", "during")) == [
                .none, .push(.message(channel: "a".bytes, payload: "during".bytes)),
            ]
        )
        #expect(harness.receive(.pubsub("subscribe", "b", 2)) == [.none])
        #expect(harness.machine.status == .handshaking, "one restoring command still unconfirmed")
        #expect(harness.receive(.pubsub("psubscribe", "p.*", 3)) == [.ready(write: [.get("k")])])
        #expect(harness.machine.subscriptions.channels == ["a".bytes, "b".bytes])
    }

    @Test func aRefusedRestoreFailsTheHandshake() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("SUBSCRIBE", "a"), 1)
        _ = harness.receive(.pubsub("subscribe", "a", 1))
        _ = harness.machine.connectionClosed("eof", now: harness.now)
        _ = harness.fireAtDeadline()
        _ = harness.machine.connected(now: harness.now)
        _ = harness.receive(.helloReply)
        let actions = harness.receive(.error("NOPERM this user has no permissions to access the 'a' channel"))
        guard case .close(_, let error, .some)? = actions.first else {
            Issue.record("expected a close, got \(actions)")
            return
        }
        #expect(
            error
                == .handshakeFailed(
                    command: "SUBSCRIBE",
                    message: "NOPERM this user has no permissions to access the 'a' channel"
                )
        )
    }

    @Test func anUnsubscribeQueuedDuringTheOutageIsCountedAgainstTheRestoredSet() {
        var harness = MachineHarness()
        _ = harness.connectReady()
        _ = harness.send(RESPCommand("SUBSCRIBE", "a", "b"), 1)
        _ = harness.receive(.pubsub("subscribe", "a", 1), .pubsub("subscribe", "b", 2))
        _ = harness.machine.connectionClosed("eof", now: harness.now)
        _ = harness.fireAtDeadline()
        #expect(harness.send(RESPCommand("UNSUBSCRIBE"), 2) == .none)
        _ = harness.machine.connected(now: harness.now)
        #expect(harness.receive(.helloReply) == [.writeAll([RESPCommand("SUBSCRIBE", "a", "b")])])
        #expect(
            harness.receive(.pubsub("subscribe", "a", 1), .pubsub("subscribe", "b", 2))
                == [.none, .ready(write: [RESPCommand("UNSUBSCRIBE")])]
        )
        let confirmations: [RESPValue] = [.pubsub("unsubscribe", "a", 1), .pubsub("unsubscribe", "b", 0)]
        #expect(harness.receive(confirmations[0], confirmations[1]) == [.none, .reply(2, .array(confirmations))])
        #expect(harness.machine.subscriptions.isEmpty)
    }
}
