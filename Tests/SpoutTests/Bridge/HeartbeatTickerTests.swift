import Dispatch
import EventLoops
import HTTPServer
import TestSupport
import Testing

@testable import Spout

/// The heartbeat timer runs only while a stream takes part: an idle loop must not wake Dispatch.
@Suite(.offPool) struct HeartbeatTickerTests {
    private final class Participant: HeartbeatParticipant, @unchecked Sendable {
        // @unchecked Sendable: only touched on the ticker's loop; the signal is thread-safe.
        let ticked = TestSignal()
        func heartbeatTick(ticksPerHeartbeat: Int) { ticked.signal() }
    }

    private func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) -> T {
        loop.runAndWait(body)
    }

    @Test func timerRunsOnlyWhileStreamsTakePart() {
        let loop = EventLoop(label: "heartbeat-test")
        let ticker = HeartbeatTicker(loop: loop, heartbeat: .milliseconds(20))
        defer { ticker.cancel() }
        #expect(onLoop(loop) { ticker.isTicking } == false)

        let participant = Participant()
        onLoop(loop) { ticker.add(participant) }
        #expect(onLoop(loop) { ticker.isTicking })
        #expect(participant.ticked.wait(timeout: .seconds(5)))

        onLoop(loop) { ticker.remove(participant) }
        #expect(onLoop(loop) { ticker.isTicking } == false)

        // A new participant starts it again.
        let second = Participant()
        onLoop(loop) { ticker.add(second) }
        #expect(second.ticked.wait(timeout: .seconds(5)))
        onLoop(loop) { ticker.remove(second) }
    }

    @Test func cancelledTickerStaysStopped() {
        let loop = EventLoop(label: "heartbeat-test")
        let ticker = HeartbeatTicker(loop: loop, heartbeat: .milliseconds(20))
        let participant = Participant()
        onLoop(loop) { ticker.add(participant) }
        ticker.cancel()
        #expect(onLoop(loop) { ticker.isTicking } == false)
        onLoop(loop) { ticker.add(Participant()) }
        #expect(onLoop(loop) { ticker.isTicking } == false)
    }
}
