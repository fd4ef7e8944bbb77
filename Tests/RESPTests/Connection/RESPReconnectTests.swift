import RESP
import Testing

@Suite struct RESPReconnectTests {
    @Test func delaysGrowToTheCapWithinTheirJitterBand() {
        let policy = RESPReconnectPolicy()
        let expectedBases: [Double] = [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10, 10, 10]
        for (index, base) in expectedBases.enumerated() {
            let failure = index + 1
            #expect(abs(seconds(policy.delay(afterFailure: failure, random: 0)) - base) < 1e-9, "failure \(failure)")
            let lowest = seconds(policy.delay(afterFailure: failure, random: 0.999_999))
            #expect(abs(lowest - base / 2) < base * 1e-5, "failure \(failure), most jitter")
        }
        #expect(policy.delay(afterFailure: Int.max, random: 0) == .seconds(10), "a huge count stays at the cap")
    }

    @Test func outOfRangeSettingsAreClamped() {
        let policy = RESPReconnectPolicy(
            initialDelay: .seconds(-1),
            maxDelay: .seconds(1),
            multiplier: .nan,
            jitter: 7,
            maxAttempts: -3
        )
        #expect(policy.initialDelay == .zero)
        #expect(policy.multiplier == 1)
        #expect(policy.jitter == 1)
        #expect(policy.maxAttempts == 0)
        #expect(policy.delay(afterFailure: 5, random: .nan) == .zero)
        let slow = RESPReconnectPolicy(initialDelay: .seconds(2), maxDelay: .seconds(1), jitter: 0)
        #expect(slow.delay(afterFailure: 1, random: 0.5) == .seconds(1), "the cap wins over the initial delay")
    }

    @Test func theMachineWaitsThePolicysDelayThenConnectsAgain() {
        let policy = RESPReconnectPolicy(initialDelay: .seconds(1), maxDelay: .seconds(4), jitter: 0)
        var harness = MachineHarness(.init(pingInterval: nil, reconnect: policy))
        _ = harness.machine.start(now: harness.now)
        var delays: [Duration] = []
        for _ in 0..<4 {
            guard case .close(_, _, let delay?) = harness.machine.connectionClosed("refused", now: harness.now) else {
                Issue.record("expected a reconnect")
                return
            }
            delays.append(delay)
            #expect(harness.machine.nextDeadline == harness.now + delay)
            #expect(harness.advance(by: delay - .milliseconds(1)) == .none)
            #expect(harness.advance(by: .milliseconds(1)) == .connect)
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(4)])
        #expect(harness.machine.consecutiveFailures == 4)
        _ = harness.machine.connected(now: harness.now)
        _ = harness.receive(.helloReply)
        #expect(harness.machine.consecutiveFailures == 0, "a ready connection resets the backoff")
        guard case .close(_, _, let delay?) = harness.machine.connectionClosed("eof", now: harness.now) else {
            Issue.record("expected a reconnect")
            return
        }
        #expect(delay == .seconds(1))
    }

    @Test func jitterIsDeterministicPerSeedAndDiffersAcrossSeeds() {
        func firstDelays(seed: UInt64) -> [Duration] {
            var harness = MachineHarness(.init(pingInterval: nil), seed: seed)
            _ = harness.machine.start(now: harness.now)
            var delays: [Duration] = []
            for _ in 0..<5 {
                if case .close(_, _, let delay?) = harness.machine.connectionClosed("x", now: harness.now) {
                    delays.append(delay)
                }
                _ = harness.fireAtDeadline()
            }
            return delays
        }
        #expect(firstDelays(seed: 7) == firstDelays(seed: 7))
        #expect(firstDelays(seed: 7) != firstDelays(seed: 8))
        for (index, delay) in firstDelays(seed: 99).enumerated() {
            let base = 0.1 * Double(1 << index)
            #expect(seconds(delay) > base / 2 - 1e-9 && seconds(delay) <= base, "attempt \(index + 1): \(delay)")
        }
    }

    @Test func givingUpAfterMaxAttemptsClosesForGood() {
        var harness = MachineHarness(.init(pingInterval: nil, reconnect: .init(maxAttempts: 2)))
        _ = harness.machine.start(now: harness.now)
        #expect(harness.send(.get("a"), 1) == .none)
        guard case .close([1], .connectionLost, .some) = harness.machine.connectionClosed("refused", now: harness.now)
        else {
            Issue.record("first failure should retry")
            return
        }
        _ = harness.fireAtDeadline()
        guard case .close([], .connectionLost, .some) = harness.machine.connectionClosed("refused", now: harness.now)
        else {
            Issue.record("second failure should retry")
            return
        }
        _ = harness.fireAtDeadline()
        #expect(
            harness.machine.connectionClosed("refused", now: harness.now)
                == .close(failing: [], error: .connectionLost("refused"), reconnectAfter: nil)
        )
        #expect(harness.machine.status == .closed)
        #expect(harness.send(.get("b"), 2) == .fail(2, .closed))
    }

    @Test func neverReconnectsClosesOnTheFirstFailure() {
        var harness = MachineHarness(.init(pingInterval: nil, reconnect: .never))
        _ = harness.connectReady()
        #expect(
            harness.machine.connectionClosed("eof", now: harness.now)
                == .close(failing: [], error: .connectionLost("eof"), reconnectAfter: nil)
        )
    }
}

func seconds(_ duration: Duration) -> Double {
    let (whole, fraction) = duration.components
    return Double(whole) + Double(fraction) * 1e-18
}
