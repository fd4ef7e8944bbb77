import Testing

@testable import HTTPServer

@Suite struct ConnectionStateMachineTests {
    private typealias Machine = ConnectionStateMachine

    private func headReceived(
        _ machine: inout Machine,
        supported: Bool = true,
        isHead: Bool = false,
        version: Version = .http1_1,
        keepAlive: Bool = true,
        expectsContinue: Bool = false
    ) -> Machine.Action {
        machine.requestBytesReceived()
        return machine.headReceived(
            isSupportedMethod: supported,
            isHead: isHead,
            version: version,
            keepAlive: keepAlive,
            expectsContinue: expectsContinue
        )
    }

    @Test func keepAliveRequestCycleReturnsToIdle() {
        var machine = Machine()
        #expect(machine.state == .idle)
        #expect(machine.timerKind == .idle)
        #expect(headReceived(&machine) == .none)
        #expect(machine.timerKind == .bodyRead)
        #expect(machine.requestEnded() == .deliverRequest)
        #expect(!machine.wantsToRead)
        #expect(machine.timerKind == .none)
        #expect(machine.fixedResponseWritten() == .readNextRequest)
        #expect(machine.state == .idle)
        #expect(machine.wantsToRead)
    }

    @Test func closingRequestFlushesThenLingersThenCloses() {
        var machine = Machine()
        _ = headReceived(&machine, keepAlive: false)
        _ = machine.requestEnded()
        #expect(machine.fixedResponseWritten() == .closeAfterFlush)
        #expect(!machine.wantsToRead)
        #expect(machine.outboundFlushed() == .startLingering)
        #expect(machine.state == .lingering)
        #expect(machine.wantsToRead)
        #expect(machine.timerKind == .linger)
        #expect(machine.peerClosed() == .close)
        #expect(machine.state == .closed)
    }

    @Test func expectContinueAsksForTheInterimResponse() {
        var machine = Machine()
        #expect(headReceived(&machine, expectsContinue: true) == .sendContinue)
    }

    @Test func unsupportedMethodIsAnsweredWith501AndClose() {
        var machine = Machine()
        #expect(headReceived(&machine, supported: false) == .sendErrorAndClose(.notImplemented))
        #expect(machine.state == .closingAfterFlush)
    }

    @Test func parseFailureAnswersItsStatusAndCloses() {
        var machine = Machine()
        machine.requestBytesReceived()
        #expect(machine.parseFailed(.badRequest) == .sendErrorAndClose(.badRequest))
        #expect(machine.state == .closingAfterFlush)
    }

    @Test func headTimeoutIs408ButIdleTimeoutJustCloses() {
        var reading = Machine()
        reading.requestBytesReceived()
        #expect(reading.timerKind == .headRead)
        #expect(reading.timedOut() == .sendErrorAndClose(.requestTimeout))

        var idle = Machine()
        #expect(idle.timedOut() == .close)
        #expect(idle.state == .closed)
    }

    @Test func http1_0StreamEndsByClosing() {
        var machine = Machine()
        _ = headReceived(&machine, version: .http1_0, keepAlive: true)
        _ = machine.requestEnded()
        machine.streamStarted()
        #expect(machine.streamingContext?.keepAlive == false)
        #expect(machine.streamFinished() == .closeAfterFlush)
    }

    @Test func streamingKeepAliveReturnsToIdleAfterFinish() {
        var machine = Machine()
        _ = headReceived(&machine)
        _ = machine.requestEnded()
        machine.streamStarted()
        #expect(machine.streamingContext != nil)
        #expect(machine.streamFinished() == .readNextRequest)
    }

    @Test func shutdownClosesIdleNotifiesStreamsAndLetsInFlightRequestsFinish() {
        var idle = Machine()
        #expect(idle.shutdownRequested() == .close)

        var streaming = Machine()
        _ = headReceived(&streaming)
        _ = streaming.requestEnded()
        streaming.streamStarted()
        #expect(streaming.shutdownRequested() == .notifyStreamOfShutdown)
        #expect(streaming.streamFinished() == .closeAfterFlush)

        var inFlight = Machine()
        _ = headReceived(&inFlight)
        _ = inFlight.requestEnded()
        #expect(inFlight.shutdownRequested() == .none)
        #expect(inFlight.awaitingContext.map { inFlight.responseCloses($0) } == true)
        #expect(inFlight.fixedResponseWritten() == .closeAfterFlush)
    }

    @Test func peerCloseWhileAwaitingClosesAndLaterEventsAreIgnored() {
        var machine = Machine()
        _ = headReceived(&machine)
        _ = machine.requestEnded()
        #expect(machine.peerClosed() == .close)
        #expect(machine.peerClosed() == .none)
        #expect(machine.mustClose() == .none)
        #expect(machine.timedOut() == .none)
        #expect(machine.awaitingContext == nil)
    }

    @Test func headResponseContextIsRecorded() {
        var machine = Machine()
        _ = headReceived(&machine, isHead: true)
        _ = machine.requestEnded()
        #expect(machine.awaitingContext == .init(keepAlive: true, isHead: true, isHTTP1_0: false))
    }
}
