import HTTPServer
import Reactive
import TestSupport
import Testing

@testable import Spout

/// Every transition of the bridge's demand machine, as pure state.
@Suite struct DemandBridgeStateMachineTests {
    private typealias Machine = DemandBridgeStateMachine

    /// An action as text, with the subscription it names checked against `subscription`.
    private func describe(_ action: Machine.Action, _ subscription: TrackingSubscription? = nil) -> String {
        func same(_ other: (any Subscription)?) -> String {
            guard let other else { return "nil" }
            return (other as AnyObject) === subscription ? "sub" : "other"
        }
        switch action {
        case .none: return "none"
        case .request(let s, let window): return "request(\(same(s)), \(window))"
        case .cancel(let s): return "cancel(\(same(s)))"
        case .end(let reason, let s): return "end(\(reason), \(same(s)))"
        case .fail(let problem): return "fail(\(problem.detail))"
        case .abandon(let s): return "abandon(\(same(s)))"
        case .yield: return "yield"
        }
    }

    private func stateName(_ machine: Machine) -> String {
        switch machine.state {
        case .awaitingSubscription: "awaitingSubscription"
        case .idle(_, let outstanding): "idle(\(outstanding))"
        case .requesting(_, let window, _): "requesting(\(window))"
        case .yielded: "yielded"
        case .completingInRequest(.finished): "completingInRequest(finished)"
        case .completingInRequest(.failed): "completingInRequest(failed)"
        case .ended(let reason): "ended(\(reason))"
        }
    }

    /// Runs `body` with a machine inside a request of `window`, its session at `session`.
    private func requesting(
        window: Int = 4,
        _ body: (inout Machine, TrackingSubscription, UnsafeMutablePointer<OutboundBuffer>) -> Void
    ) {
        var machine = Machine()
        let subscription = TrackingSubscription()
        _ = machine.subscribed(subscription, window: window)
        var buffer = OutboundBuffer()
        withUnsafeMutablePointer(to: &buffer) { session in
            machine.requestStarted(session: session)
            body(&machine, subscription, session)
        }
    }

    @Test func aSubscriptionIsAskedForTheFirstWindowOrWaitsForTheWriter() {
        var ready = Machine()
        let subscription = TrackingSubscription()
        #expect(describe(ready.subscribed(subscription, window: 16), subscription) == "request(sub, 16)")
        #expect(stateName(ready) == "idle(16)")

        var blocked = Machine()
        #expect(describe(blocked.subscribed(subscription, window: 0)) == "none")
        #expect(stateName(blocked) == "idle(0)")
        #expect(describe(blocked.becameWritable(window: 0)) == "none")
        #expect(describe(blocked.becameWritable(window: 8), subscription) == "request(sub, 8)")
    }

    @Test func aSecondSubscriptionOrALateOneIsCancelled() {
        var machine = Machine()
        let first = TrackingSubscription()
        let second = TrackingSubscription()
        _ = machine.subscribed(first, window: 1)
        #expect(describe(machine.subscribed(second, window: 1), second) == "cancel(sub)")
        var ended = Machine()
        _ = ended.clientGone()
        #expect(describe(ended.subscribed(second, window: 1), second) == "cancel(sub)")
    }

    @Test func valuesInsideTheRequestGoToTheLentBufferAndAreCountedWhenItReturns() {
        requesting(window: 4) { machine, subscription, session in
            #expect(stateName(machine) == "requesting(4)")
            #expect(machine.delivery(of: 3) == .appendToSession(session))
            // All four arrived inside: the next window is due at once, and the bridge loops.
            #expect(
                describe(machine.requestReturned(received: 4, turnUsedUp: false) { 6 }, subscription)
                    == "request(sub, 6)"
            )
            #expect(stateName(machine) == "idle(6)")
        }
    }

    @Test func anAsynchronousProducerLeavesTheWindowOutstanding() {
        requesting(window: 4) { machine, _, _ in
            #expect(
                describe(
                    machine.requestReturned(received: 0, turnUsedUp: false) {
                        Issue.record("not asked"); return 9
                    }
                ) == "none"
            )
            #expect(stateName(machine) == "idle(4)")
            // Its values arrive later, outside any request: written one by one, the next window when all came.
            #expect(machine.delivery(of: 1) == .write)
            #expect(
                describe(
                    machine.valuesWritten(3) {
                        Issue.record("not asked"); return 9
                    }
                ) == "none"
            )
            #expect(stateName(machine) == "idle(1)")
            #expect(describe(machine.becameWritable(window: 5)) == "none")  // one value still outstanding
        }
    }

    @Test func aPartlyFilledWindowWaitsForTheRest() {
        requesting(window: 4) { machine, subscription, _ in
            #expect(describe(machine.requestReturned(received: 1, turnUsedUp: true) { 9 }) == "none")
            #expect(stateName(machine) == "idle(3)")
            // Over-delivery is tolerated: five written of three outstanding.
            #expect(describe(machine.valuesWritten(5) { 2 }, subscription) == "request(sub, 2)")
        }
    }

    @Test func aFilledWindowWaitsForTheWriterWhenItCanTakeNoMore() {
        requesting(window: 4) { machine, subscription, _ in
            #expect(describe(machine.requestReturned(received: 4, turnUsedUp: false) { 0 }) == "none")
            #expect(stateName(machine) == "idle(0)")
            #expect(describe(machine.becameWritable(window: 7), subscription) == "request(sub, 7)")
        }
    }

    @Test func aFullTurnYieldsAndTheResumeAsksAgain() {
        requesting(window: 4) { machine, subscription, _ in
            #expect(
                describe(
                    machine.requestReturned(received: 4, turnUsedUp: true) {
                        Issue.record("not asked"); return 1
                    }
                ) == "yield"
            )
            #expect(stateName(machine) == "yielded")
            #expect(machine.delivery(of: 1) == .write)  // an over-delivering producer is still written
            #expect(describe(machine.becameWritable(window: 3)) == "none")  // the resume decides
            #expect(describe(machine.resumed(window: 0)) == "none")
            #expect(stateName(machine) == "idle(0)")
        }
        requesting(window: 4) { machine, subscription, _ in
            _ = machine.requestReturned(received: 4, turnUsedUp: true) { 1 }
            #expect(describe(machine.resumed(window: 5), subscription) == "request(sub, 5)")
        }
    }

    @Test func aCompletionInsideTheRequestEndsTheStreamWhenItReturns() {
        requesting { machine, _, _ in
            #expect(describe(machine.finished()) == "none")
            #expect(stateName(machine) == "completingInRequest(finished)")
            #expect(machine.delivery(of: 1) == .drop)
            #expect(describe(machine.finished()) == "none")
            #expect(describe(machine.requestReturned(received: 2, turnUsedUp: false) { 1 }) == "end(completed, nil)")
            #expect(machine.endReason == .completed)
        }
        requesting { machine, _, _ in
            #expect(
                describe(machine.failed(Problem(status: 502, type: "/problems/t", title: "t", detail: "upstream down")))
                    == "none"
            )
            #expect(describe(machine.requestReturned(received: 0, turnUsedUp: false) { 1 }) == "fail(upstream down)")
            #expect(machine.endReason == .error)
        }
    }

    @Test func aCompletionOutsideARequestEndsAtOnce() {
        var idle = Machine()
        _ = idle.subscribed(TrackingSubscription(), window: 2)
        #expect(describe(idle.finished()) == "end(completed, nil)")
        #expect(describe(idle.finished()) == "none")
        #expect(idle.delivery(of: 1) == .drop)

        var early = Machine()
        #expect(
            describe(early.failed(Problem(status: 500, type: "/problems/t", title: "t", detail: "boom")))
                == "fail(boom)"
        )
    }

    @Test func theClientLeavingAtAnyPointCancelsOnce() {
        var waiting = Machine()
        #expect(describe(waiting.clientGone()) == "abandon(nil)")
        #expect(waiting.endReason == .clientGone)

        var idle = Machine()
        let subscription = TrackingSubscription()
        _ = idle.subscribed(subscription, window: 2)
        #expect(describe(idle.clientGone(), subscription) == "abandon(sub)")
        #expect(describe(idle.clientGone()) == "none")
        #expect(describe(idle.becameWritable(window: 4)) == "none")
        #expect(describe(idle.shutdownRequested()) == "none")

        // Mid-window, while the request is still on the stack (the writer's flush found the peer gone).
        requesting { machine, subscription, _ in
            #expect(describe(machine.clientGone(), subscription) == "abandon(sub)")
            #expect(describe(machine.requestReturned(received: 4, turnUsedUp: false) { 4 }) == "none")
            #expect(machine.delivery(of: 1) == .drop)
        }
        requesting { machine, subscription, _ in
            _ = machine.requestReturned(received: 4, turnUsedUp: true) { 4 }
            #expect(describe(machine.clientGone(), subscription) == "abandon(sub)")
            #expect(describe(machine.resumed(window: 4)) == "none")
        }
        requesting { machine, _, _ in
            _ = machine.finished()
            #expect(describe(machine.clientGone()) == "abandon(nil)")
            #expect(describe(machine.requestReturned(received: 0, turnUsedUp: false) { 4 }) == "none")
        }
    }

    @Test func shutdownEndsWithItsFrameAndCancelsTheProducer() {
        var waiting = Machine()
        #expect(describe(waiting.shutdownRequested()) == "end(shutdown, nil)")

        var idle = Machine()
        let subscription = TrackingSubscription()
        _ = idle.subscribed(subscription, window: 2)
        #expect(describe(idle.shutdownRequested(), subscription) == "end(shutdown, sub)")
        #expect(idle.endReason == .shutdown)
        #expect(describe(idle.clientGone()) == "none")

        requesting { machine, subscription, _ in
            _ = machine.requestReturned(received: 4, turnUsedUp: true) { 4 }
            #expect(describe(machine.shutdownRequested(), subscription) == "end(shutdown, sub)")
        }
    }
}
