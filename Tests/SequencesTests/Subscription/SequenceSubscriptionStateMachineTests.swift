import Reactive
import Testing

@testable import Sequences

@Suite struct SequenceSubscriptionStateMachineTests {
    @Test func firstRequestMakesTheCallerTheEmitter() {
        var machine = SequenceSubscriptionStateMachine()
        #expect(machine.demandRequested(.max(2)) == .startDelivering(demand: .max(2)))
        #expect(!machine.isTerminal)
    }

    @Test func requestsWhileDeliveringOnlyAddPendingDemand() {
        var machine = SequenceSubscriptionStateMachine()
        _ = machine.demandRequested(.max(1))
        #expect(machine.demandRequested(.max(2)) == .none)
        #expect(machine.demandRequested(.max(3)) == .none)
        #expect(machine.demandExhausted() == .continueDelivering(demand: .max(5)))
        #expect(machine.demandExhausted() == .stop)
        #expect(machine.demandRequested(.unlimited) == .startDelivering(demand: .unlimited))
    }

    @Test func pendingDemandSaturatesAtUnlimited() {
        var machine = SequenceSubscriptionStateMachine()
        _ = machine.demandRequested(.max(1))
        _ = machine.demandRequested(.max(.max))
        _ = machine.demandRequested(.max(.max))
        #expect(machine.demandExhausted() == .continueDelivering(demand: .unlimited))
    }

    @Test func cancelWhileIdleReleasesAndEndsEverything() {
        var machine = SequenceSubscriptionStateMachine()
        #expect(machine.cancelled() == .release)
        #expect(machine.isTerminal)
        #expect(machine.cancelled() == .none)
        #expect(machine.demandRequested(.max(1)) == .none)
    }

    @Test func cancelWhileDeliveringLeavesTheReleaseToTheEmitter() {
        var machine = SequenceSubscriptionStateMachine()
        _ = machine.demandRequested(.max(1))
        #expect(machine.cancelled() == .stopEmitter)
        #expect(machine.demandRequested(.max(1)) == .none)
        #expect(machine.demandExhausted() == .release)
    }

    @Test func cancelWhileDeliveringSuppressesCompletion() {
        var machine = SequenceSubscriptionStateMachine()
        _ = machine.demandRequested(.max(1))
        _ = machine.cancelled()
        #expect(machine.sequenceEnded() == .release)
    }

    @Test func endingFinishesOnce() {
        var machine = SequenceSubscriptionStateMachine()
        _ = machine.demandRequested(.max(1))
        #expect(machine.sequenceEnded() == .finish)
        #expect(machine.isTerminal)
        #expect(machine.cancelled() == .none)
    }
}
