import Reactive
import Testing

@testable import Sequences

@Suite struct SequenceSubscriptionStateMachineTests {
    private typealias Machine = SequenceSubscriptionStateMachine<String>

    private static func source() -> TermSource {
        TermSource(kind: .naturals, start: 0, lastIndex: 9)
    }

    @Test func firstRequestHandsTheDownstreamToTheEmitter() {
        var machine = Machine(downstream: "downstream", source: Self.source())
        guard case .startDelivering(let downstream, _, let demand) = machine.demandRequested(.max(2)) else {
            Issue.record("expected startDelivering")
            return
        }
        #expect(downstream == "downstream")
        #expect(demand == .max(2))
    }

    @Test func requestsWhileDeliveringOnlyAddPendingDemand() {
        var machine = Machine(downstream: "d", source: Self.source())
        _ = machine.demandRequested(.max(1))
        guard case .none = machine.demandRequested(.max(2)) else {
            Issue.record("a nested request must not start a second emitter")
            return
        }
        _ = machine.demandRequested(.max(3))
        guard
            case .continueDelivering(_, _, let pending) = machine.demandExhausted(
                downstream: "d",
                source: Self.source()
            )
        else {
            Issue.record("expected continueDelivering")
            return
        }
        #expect(pending == .max(5))
        guard case .stop = machine.demandExhausted(downstream: "d", source: Self.source()) else {
            Issue.record("expected stop")
            return
        }
        guard case .startDelivering(_, _, let demand) = machine.demandRequested(.unlimited) else {
            Issue.record("an idle machine hands over to the next requester")
            return
        }
        #expect(demand == .unlimited)
    }

    @Test func cancelWhileIdleReleasesAndEndsEverything() {
        var machine = Machine(downstream: "d", source: Self.source())
        guard case .release(let downstream, _) = machine.cancelled() else {
            Issue.record("expected release")
            return
        }
        #expect(downstream == "d")
        #expect(machine.isTerminal)
        guard case .none = machine.cancelled(), case .none = machine.demandRequested(.max(1)) else {
            Issue.record("a terminal machine ignores everything")
            return
        }
    }

    @Test func cancelWhileDeliveringStopsTheEmitterAndSuppressesCompletion() {
        var machine = Machine(downstream: "d", source: Self.source())
        _ = machine.demandRequested(.max(1))
        guard case .stopEmitter = machine.cancelled() else {
            Issue.record("expected stopEmitter")
            return
        }
        guard case .none = machine.sequenceEnded() else {
            Issue.record("no completion after cancel")
            return
        }
        guard case .release = machine.demandExhausted(downstream: "d", source: Self.source()) else {
            Issue.record("the emitter drops what it holds")
            return
        }
    }

    @Test func endingFinishesOnce() {
        var machine = Machine(downstream: "d", source: Self.source())
        _ = machine.demandRequested(.max(1))
        guard case .finish = machine.sequenceEnded() else {
            Issue.record("expected finish")
            return
        }
        #expect(machine.isTerminal)
        guard case .none = machine.cancelled() else {
            Issue.record("cancel after finishing does nothing")
            return
        }
    }
}
