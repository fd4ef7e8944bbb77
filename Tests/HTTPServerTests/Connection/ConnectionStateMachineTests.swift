import Testing

@testable import HTTPServer

/// The stand-in for a ``BodyWriter``: the machine only compares writers by identity.
final class FakeStreamHandle {}

@Suite struct ConnectionStateMachineTests {
    private typealias Machine = ConnectionStateMachine<FakeStreamHandle>

    private static let second: UInt64 = 1_000_000_000
    private static let timeouts = Machine.Timeouts(
        idle: 60 * second,
        headRead: 10 * second,
        bodyRead: 30 * second,
        writeStall: 300 * second,
        linger: 2 * second
    )
    private static let watermark = AdaptiveWatermark.Settings(
        maximumBytes: 256 * 1024,
        minimumBytes: 4096,
        lowBytes: 1024,
        adapts: true
    )

    private func headReceived(
        _ machine: inout Machine,
        supported: Bool = true,
        isHead: Bool = false,
        version: Version = .http1_1,
        keepAlive: Bool = true,
        expectsContinue: Bool = false,
        now: UInt64 = 0,
        allowance: Machine.BodyAllowance = .init(limit: 1024, declared: nil)
    ) -> Machine.Action {
        machine.requestBytesBuffered(now: now)
        return machine.headReceived(
            isSupportedMethod: supported,
            method: .post,
            isHead: isHead,
            version: version,
            keepAlive: keepAlive,
            expectsContinue: expectsContinue,
            now: now,
            allowance: { allowance }
        )
    }

    /// A machine with a stream open for `writer`.
    private func streaming(_ writer: FakeStreamHandle, version: Version = .http1_1) -> Machine {
        var machine = Machine(now: 0)
        _ = headReceived(&machine, version: version)
        _ = machine.requestEnded()
        _ = machine.streamStarted(writer: writer, mode: .chunked, watermark: Self.watermark)
        return machine
    }

    @Test func keepAliveRequestCycleReturnsToIdle() {
        var machine = Machine(now: 0)
        #expect(machine.state == .idle(since: 0))
        #expect(headReceived(&machine, now: 5) == .none)
        #expect(
            machine.state
                == .readingBody(
                    .init(keepAlive: true, isHead: false, isHTTP1_0: false),
                    .init(startedAt: 5, lastByteAt: 5)
                )
        )
        #expect(machine.requestEnded() == .deliverRequest)
        #expect(!machine.wantsToRead)
        #expect(machine.fixedResponseWritten(now: 9) == .readNextRequest)
        #expect(machine.state == .idle(since: 9))
        #expect(machine.wantsToRead)
    }

    @Test func closingRequestFlushesThenLingersThenCloses() {
        var machine = Machine(now: 0)
        _ = headReceived(&machine, keepAlive: false)
        _ = machine.requestEnded()
        #expect(machine.fixedResponseWritten(now: 1) == .closeAfterFlush)
        #expect(!machine.wantsToRead)
        #expect(machine.outboundFlushed(now: { 7 }) == .startLingering)
        #expect(machine.state == .lingering(since: 7))
        #expect(machine.wantsToRead)
        #expect(machine.peerClosed() == .close(endingStream: nil))
        #expect(machine.state == .closed)
    }

    @Test func expectContinueAsksForTheInterimResponse() {
        var machine = Machine(now: 0)
        #expect(headReceived(&machine, expectsContinue: true) == .sendContinue)
    }

    @Test func unsupportedMethodIsAnsweredWith501AndClose() {
        var machine = Machine(now: 0)
        #expect(
            headReceived(&machine, supported: false)
                == .sendErrorAndClose(.notImplemented, reason: "method POST is not implemented")
        )
        #expect(machine.state == .closingAfterFlush)
    }

    @Test func parseFailureAnswersItsStatusAndCloses() {
        var machine = Machine(now: 0)
        machine.requestBytesBuffered(now: 0)
        #expect(machine.parseFailed(.badRequest, reason: "bad") == .sendErrorAndClose(.badRequest, reason: "bad"))
        #expect(machine.state == .closingAfterFlush)
    }

    // MARK: Deadlines

    private func check(_ machine: inout Machine, at seconds: UInt64, pendingSince: UInt64? = nil) -> Machine.Action {
        machine.deadlinesChecked(now: seconds * Self.second, pendingOutputSince: pendingSince, timeouts: Self.timeouts)
    }

    @Test func idleTimeoutClosesQuietlyButNotWhileOutputIsPending() {
        var idle = Machine(now: 0)
        #expect(check(&idle, at: 59) == .none)
        #expect(check(&idle, at: 60, pendingSince: 59 * Self.second) == .none)  // still sending: write-stall rules
        #expect(check(&idle, at: 60) == .close(endingStream: nil))
        #expect(idle.state == .closed)
    }

    @Test func headTimeoutIs408WithItsOwnMessage() {
        var machine = Machine(now: 0)
        machine.requestBytesBuffered(now: 3 * Self.second)
        #expect(check(&machine, at: 12) == .none)
        #expect(
            check(&machine, at: 13)
                == .sendErrorAndClose(.requestTimeout, reason: "request head not received within 10 s")
        )
        #expect(machine.state == .closingAfterFlush)
    }

    @Test func aTricklingBodyMeetsTheTotalDeadlineNotAnInactivityOne() {
        var machine = Machine(now: 0)
        _ = headReceived(&machine, now: 0, allowance: .init(limit: 1_000_000, declared: 1_000_000))
        // A byte every second keeps the stall timer quiet…
        for second in 1...29 {
            #expect(
                machine.bodyReceived(
                    1,
                    now: UInt64(second) * Self.second,
                    allowance: { .init(limit: 1_000_000, declared: 1_000_000) }
                ) == .none
            )
            #expect(check(&machine, at: UInt64(second)) == .none)
        }
        // …but not the deadline for the whole body.
        #expect(
            check(&machine, at: 30)
                == .sendErrorAndClose(
                    .requestTimeout,
                    reason: "request body not received within 30 s (29 bytes arrived)"
                )
        )
    }

    @Test func aStalledBodyIs408AfterTheIdleTimeoutAndAnyReadCountsAsProgress() {
        let timeouts = Machine.Timeouts(
            idle: 5 * Self.second,
            headRead: Self.second,
            bodyRead: 60 * Self.second,
            writeStall: 300 * Self.second,
            linger: Self.second
        )
        var machine = Machine(now: 0)
        _ = headReceived(&machine, now: 0)
        machine.bytesRead(now: 4 * Self.second)  // chunk framing, no body byte yet
        #expect(machine.deadlinesChecked(now: 8 * Self.second, pendingOutputSince: nil, timeouts: timeouts) == .none)
        #expect(
            machine.deadlinesChecked(now: 9 * Self.second, pendingOutputSince: nil, timeouts: timeouts)
                == .sendErrorAndClose(
                    .requestTimeout,
                    reason: "request body stalled: no byte for 5 s (0 bytes arrived)"
                )
        )
    }

    @Test func aTimeoutIsDescribedInWholeSecondsOrElseInMilliseconds() {
        #expect(Machine.describe(5 * Self.second) == "5 s")
        #expect(Machine.describe(200_000_000) == "200 ms")
        #expect(Machine.describe(1_500_000_000) == "1500 ms")
    }

    @Test func lingerEndsAfterItsTimeout() {
        var machine = Machine(now: 0)
        _ = headReceived(&machine, keepAlive: false)
        _ = machine.requestEnded()
        _ = machine.fixedResponseWritten(now: 0)
        _ = machine.outboundFlushed(now: { 10 * Self.second })
        #expect(check(&machine, at: 11) == .none)
        #expect(check(&machine, at: 12) == .close(endingStream: nil))
    }

    @Test func aStalledWriterIsCutInAnyStateAndItsStreamHearsWhy() {
        let writer = FakeStreamHandle()
        var machine = streaming(writer)
        #expect(check(&machine, at: 299, pendingSince: 0) == .none)
        #expect(check(&machine, at: 300, pendingSince: 0) == .closeStalled(endingStream: writer))
        #expect(machine.state == .closed)
        #expect(check(&machine, at: 301, pendingSince: 0) == .none, "closed once")

        var answering = Machine(now: 0)
        _ = headReceived(&answering)
        _ = answering.requestEnded()
        _ = answering.fixedResponseWritten(now: 0)
        #expect(check(&answering, at: 300, pendingSince: 0) == .closeStalled(endingStream: nil))
    }

    // MARK: Draining

    @Test func aQuiescingConnectionClosesGracefullyOnceIdleForTheDrainTimeUnlessInputWaits() {
        let second = Self.second
        var idle = Machine(now: 0)
        idle.quiesce()
        #expect(idle.deadlinesChecked(now: second - 1, pendingOutputSince: nil, timeouts: Self.timeouts) == .none)
        // A request already in the receive buffer is read and answered (with Connection: close) instead.
        #expect(
            idle.deadlinesChecked(now: second, pendingOutputSince: nil, timeouts: Self.timeouts) { true } == .none
        )
        #expect(idle.state == .idle(since: 0))
        // Output still queued from the last answer goes first.
        #expect(idle.deadlinesChecked(now: second, pendingOutputSince: 0, timeouts: Self.timeouts) == .none)
        #expect(
            idle.deadlinesChecked(now: second, pendingOutputSince: nil, timeouts: Self.timeouts) { false }
                == .startLingering
        )
        #expect(idle.state == .lingering(since: second))

        // Not quiescing: the usual idle timeout only.
        var keepAlive = Machine(now: 0)
        #expect(check(&keepAlive, at: 1) == .none)
        #expect(check(&keepAlive, at: 59) == .none)
    }

    @Test func aQuiescingConnectionsResponsesCloseAndItNeverGoesBackToIdle() {
        var machine = Machine(now: 0)
        _ = headReceived(&machine)
        _ = machine.requestEnded()
        machine.quiesce()  // the drain began while the request was being answered
        #expect(machine.awaitingContext.map { machine.responseCloses($0) } == true)
        #expect(machine.fixedResponseWritten(now: 1) == .closeAfterFlush)
        #expect(machine.state == .closingAfterFlush)
    }

    @Test func aRefusedRequestIsAnsweredAndTheConnectionCloses() {
        var machine = Machine(now: 0)
        machine.requestBytesBuffered(now: 0)
        #expect(
            machine.requestRefused(.serviceUnavailable, reason: "too many connections")
                == .sendErrorAndClose(.serviceUnavailable, reason: "too many connections")
        )
        #expect(machine.state == .closingAfterFlush)
    }

    @Test func millisecondTimeoutsAreDescribedInMilliseconds() {
        #expect(Machine.describe(200_000_000) == "200 ms")
        #expect(Machine.describe(2_000_000_000) == "2 s")
    }

    // MARK: Body limits

    @Test func aDeclaredBodyOverTheLimitIsRefusedOnItsFirstByte() {
        var machine = Machine(now: 0)
        _ = headReceived(&machine)
        let action = machine.bodyReceived(3, now: 1) { .init(limit: 0, declared: 5) }
        #expect(action == .sendErrorAndClose(.payloadTooLarge, reason: "this request takes no body, got 5 bytes"))
        #expect(machine.state == .closingAfterFlush)
    }

    @Test func aChunkedBodyIsCountedAgainstTheLimitAsItArrives() {
        var machine = Machine(now: 0)
        _ = headReceived(&machine)
        var asked = 0
        let allowance = { () -> Machine.BodyAllowance in
            asked += 1
            return .init(limit: 10, declared: nil)
        }
        #expect(machine.bodyReceived(6, now: 1, allowance: allowance) == .none)
        #expect(machine.bodyReceived(4, now: 2, allowance: allowance) == .none)
        #expect(
            machine.bodyReceived(1, now: 3, allowance: allowance)
                == .sendErrorAndClose(
                    .payloadTooLarge,
                    reason: "request body of 11 bytes exceeds the limit of 10 bytes for this request"
                )
        )
        #expect(asked == 1)  // the policy is asked once, on the first body byte
    }

    @Test func aClientWaitingForContinueIsRefusedInsteadOfInvited() {
        var machine = Machine(now: 0)
        let refused = headReceived(&machine, expectsContinue: true, allowance: .init(limit: 100, declared: 101))
        #expect(
            refused
                == .sendErrorAndClose(
                    .payloadTooLarge,
                    reason: "request body of 101 bytes exceeds the limit of 100 bytes for this request"
                )
        )
        var invited = Machine(now: 0)
        #expect(
            headReceived(&invited, expectsContinue: true, allowance: .init(limit: 100, declared: 100)) == .sendContinue
        )
    }

    // MARK: Streams

    @Test func http1_0StreamEndsByClosing() {
        let writer = FakeStreamHandle()
        var machine = Machine(now: 0)
        _ = headReceived(&machine, version: .http1_0, keepAlive: true)
        _ = machine.requestEnded()
        let closes = machine.streamStarted(writer: writer, mode: .raw, watermark: Self.watermark)
        #expect(closes)
        #expect(machine.streamFinished(writer, now: 1) == .endStream(writer, mode: .raw, next: .closeAfterFlush))
    }

    @Test func finishingAStreamIsOneTransitionAndASecondFinishIsNothing() {
        let writer = FakeStreamHandle()
        var machine = streaming(writer)
        #expect(machine.stream(of: writer) != nil)
        #expect(machine.stream(of: FakeStreamHandle()) == nil)
        #expect(machine.streamFinished(writer, now: 4) == .endStream(writer, mode: .chunked, next: .readNextRequest))
        #expect(machine.state == .idle(since: 4))
        #expect(machine.stream(of: writer) == nil)
        #expect(machine.streamFinished(writer, now: 5) == .none)
        #expect(machine.streamAborted(writer) == .none)
    }

    @Test func aStaleWriterCannotEndTheNextStream() {
        let first = FakeStreamHandle()
        var machine = streaming(first)
        _ = machine.streamFinished(first, now: 1)
        let second = FakeStreamHandle()
        _ = headReceived(&machine)
        _ = machine.requestEnded()
        _ = machine.streamStarted(writer: second, mode: .chunked, watermark: Self.watermark)
        #expect(machine.streamFinished(first, now: 2) == .none)
        #expect(machine.streamAborted(first) == .none)
        #expect(machine.stream(of: second) != nil)
    }

    @Test func theClientLeavingClosesTheStreamInOneTransition() {
        for leave in [{ (m: inout Machine) in m.peerClosed() }, { (m: inout Machine) in m.mustClose() }] {
            let writer = FakeStreamHandle()
            var machine = streaming(writer)
            #expect(leave(&machine) == .close(endingStream: writer))
            #expect(machine.stream == nil)
            #expect(leave(&machine) == .none)
            #expect(machine.streamFinished(writer, now: 1) == .none)
        }
    }

    @Test func abortClosesWithoutTheEnd() {
        let writer = FakeStreamHandle()
        var machine = streaming(writer)
        #expect(machine.streamAborted(writer) == .close(endingStream: writer))
        #expect(machine.state == .closed)
    }

    @Test func writabilityIsTheStreamMachinesAndIsAskedNotMirrored() {
        let writer = FakeStreamHandle()
        var machine = streaming(writer)
        #expect(machine.stream?.isWritable == true)
        #expect(machine.streamBodyAppended(buffered: 4096) == .sendNow)
        #expect(machine.stream?.isWritable == false)
        #expect(machine.streamFlushed(sent: 4096, buffered: 0, readerKeptUp: { true }) == .notifyWritable)
        #expect(machine.stream?.isWritable == true)
    }

    @Test func shutdownClosesIdleNotifiesStreamsAndLetsInFlightRequestsFinish() {
        var idle = Machine(now: 0)
        #expect(idle.shutdownRequested(hasPendingOutput: false) == .close(endingStream: nil))

        // A request already in the receive buffer is read and answered, not reset by the close.
        var requestWaiting = Machine(now: 0)
        #expect(requestWaiting.shutdownRequested(hasPendingOutput: false) { true } == .none)
        #expect(requestWaiting.state == .idle(since: 0))
        #expect(requestWaiting.isQuiescing)

        var answered = Machine(now: 0)
        #expect(answered.shutdownRequested(hasPendingOutput: true) == .closeAfterFlush)
        #expect(answered.state == .closingAfterFlush)

        let writer = FakeStreamHandle()
        var streaming = streaming(writer)
        #expect(streaming.shutdownRequested(hasPendingOutput: false) == .notifyStreamOfShutdown(writer))
        #expect(streaming.stream?.phase == .finishing)
        #expect(streaming.shutdownRequested(hasPendingOutput: false) == .none)  // asked once
        #expect(streaming.streamFinished(writer, now: 1) == .endStream(writer, mode: .chunked, next: .closeAfterFlush))

        var inFlight = Machine(now: 0)
        _ = headReceived(&inFlight)
        _ = inFlight.requestEnded()
        #expect(inFlight.shutdownRequested(hasPendingOutput: false) == .none)
        #expect(inFlight.awaitingContext.map { inFlight.responseCloses($0) } == true)
        #expect(inFlight.fixedResponseWritten(now: 1) == .closeAfterFlush)
    }

    @Test func peerCloseWhileAwaitingClosesAndLaterEventsAreIgnored() {
        var machine = Machine(now: 0)
        _ = headReceived(&machine)
        _ = machine.requestEnded()
        #expect(machine.peerClosed() == .close(endingStream: nil))
        #expect(machine.peerClosed() == .none)
        #expect(machine.mustClose() == .none)
        #expect(check(&machine, at: 1_000) == .none)
        #expect(machine.awaitingContext == nil)
    }

    @Test func headResponseContextIsRecorded() {
        var machine = Machine(now: 0)
        _ = headReceived(&machine, isHead: true)
        _ = machine.requestEnded()
        #expect(machine.awaitingContext == .init(keepAlive: true, isHead: true, isHTTP1_0: false))
    }
}
