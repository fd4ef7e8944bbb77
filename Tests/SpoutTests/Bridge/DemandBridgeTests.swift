import Dispatch
import EventLoops
import HTTPServer
import Reactive
import TestSupport
import Testing

@testable import Spout

/// The demand bridge against a fake writer: windows, writability, re-entrant requests and cancels,
/// values from other threads, the client leaving at any point, and each way a stream ends.
@Suite(.offPool) struct DemandBridgeTests {
    private let loop = EventLoop(label: "spout.test.bridge")

    private func onLoop<R>(_ body: () throws -> R) rethrows -> R {
        try loop.runAndWait(body)
    }

    /// Waits until every block queued on the loop so far (hops included) has run.
    private func settle() {
        loop.runAndWait {}
    }

    private func makeBridge(
        _ writer: FakeStreamWriter,
        window: DemandBridge<LineEncoder, Problem>.Window = .init(),
        log: SummaryLog
    ) -> DemandBridge<LineEncoder, Problem> {
        DemandBridge<LineEncoder, Problem>(
            writer: writer,
            encoder: LineEncoder(),
            window: window,
            failureProblem: { $0 },
            onEnd: { log.record($0) }
        )
    }

    private static func lines(_ range: Range<Int>) -> String {
        range.map { "\($0)\n" }.joined()
    }

    /// A producer that delivers each window inside `request`, one `receive(_:)` per value, from `next` on.
    private func synchronousProducer(
        _ subscription: ScriptedSubscription,
        into bridge: DemandBridge<LineEncoder, Problem>,
        count: Int? = nil,
        batches: Bool = false
    ) {
        nonisolated(unsafe) var next = 0
        subscription.onRequest = { [unowned bridge] window in
            let end = count.map { min($0, next + window) } ?? next + window
            if batches {
                let values = Array(next..<end)
                if !values.isEmpty { values.withUnsafeBufferPointer { _ = bridge.receive(batch: $0) } }
            } else {
                for value in next..<end { _ = bridge.receive(value) }
            }
            next = end
            if let count, next == count { bridge.receive(completion: .finished) }
        }
    }

    // MARK: Windows and writability

    @Test func aSynchronousProducerFillsWindowAfterWindowInOneLendingEachWithoutRecursing() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop, highWatermark: 1000)
        let subscription = ScriptedSubscription()
        onLoop {
            let bridge = makeBridge(writer, log: log)
            synchronousProducer(subscription, into: bridge)
            bridge.receive(subscription: subscription)
            // Window after window until the writer is full, each asked for after the previous returned.
            #expect(!writer.isWritable)
            #expect(subscription.requests.count > 1)
            #expect(subscription.maximumDepth == 1)
            #expect(writer.lendings == 1 + subscription.requests.count)  // the prologue, then one per window
            // Past the watermark by at most the last window (sized at the average so far; values grow).
            #expect(writer.buffered < 1000 + (subscription.requests.last ?? 0) * "1000\n".utf8.count)
            let delivered = subscription.requests.reduce(0, +)
            #expect(writer.text == "P\n" + Self.lines(0..<delivered))

            // Nothing more until the writer drains; then the next window at once.
            let asked = subscription.requests.count
            writer.drain()
            #expect(subscription.requests.count > asked)
            #expect(writer.text.hasSuffix(Self.lines(delivered..<subscription.requests.reduce(0, +))))
            writer.clientLeaves()
        }
        #expect(subscription.cancels == 1)
        #expect(log.all.map(\.end) == [.clientGone])
    }

    @Test func aBatchProducerHandsEachWindowOverInOneCall() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop, highWatermark: 4096)
        let subscription = ScriptedSubscription()
        onLoop {
            let bridge = makeBridge(writer, log: log)
            synchronousProducer(subscription, into: bridge, count: 3000, batches: true)
            bridge.receive(subscription: subscription)
            while writer.isOpen && !writer.isWritable { writer.drain() }
        }
        #expect(subscription.maximumDepth == 1)
        #expect(writer.text == "P\n" + Self.lines(0..<3000) + "end:completed\n")
        #expect(writer.lendings == 1 + subscription.requests.count + 1)  // prologue, windows, end frame
        #expect(log.all == [StreamSummary(events: 3000, bytes: writer.text.utf8.count, end: .completed)])
        #expect(writer.finishes == 1)
    }

    @Test func nothingIsAskedWhileTheWriterIsFullAndTheWritableEdgeAsksForMore() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop, highWatermark: 2)  // the prologue fills it
        let subscription = ScriptedSubscription()
        onLoop {
            let bridge = makeBridge(writer, log: log)
            bridge.receive(subscription: subscription)
            #expect(subscription.requests.isEmpty)
            writer.highWatermark = 64
            writer.drain()
            #expect(subscription.requests == [2])  // 64 bytes at the guessed 32 bytes a value
            writer.clientLeaves()
        }
        #expect(subscription.cancels == 1)
    }

    @Test func valuesOnTheLoopOutsideARequestAreWrittenAndTheNextWindowFollowsTheLast() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        let bridge = onLoop { makeBridge(writer, window: .init(maximum: 3), log: log) }
        onLoop { bridge.receive(subscription: subscription) }
        #expect(subscription.requests == [3])
        // An asynchronous producer delivering on the loop (a timer on the loop's queue, say).
        for value in 0..<3 {
            loop.execute { _ = bridge.receive(value) }
        }
        settle()
        #expect(subscription.requests == [3, 3])
        #expect(writer.lendings == 1 + 2 + 3)  // the prologue, the two requests, one write per value
        onLoop { bridge.receive(completion: .finished) }
        #expect(writer.text == "P\n0\n1\n2\nend:completed\n")
        #expect(log.all.map(\.events) == [3])
    }

    @Test func aFastProducerYieldsTheLoopAfterAMegabyte() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        let turn = DemandBridge<LineEncoder, Problem>.bytesPerTurn
        let bridge = onLoop { makeBridge(writer, log: log) }
        synchronousProducer(subscription, into: bridge)
        let firstTurn = onLoop {
            bridge.receive(subscription: subscription)
            return writer.buffered
        }
        // One turn: at least a megabyte, and no more than one window past it.
        #expect(firstTurn >= turn)
        #expect(firstTurn < turn + 8192 * 8)
        settle()  // the resume ran in a later turn of the loop and wrote another megabyte
        let secondTurn = onLoop { writer.buffered }
        #expect(secondTurn >= 2 * turn)
        onLoop { writer.clientLeaves() }
        settle()
        #expect(subscription.cancels == 1)
        #expect(subscription.maximumDepth == 1)
        #expect(log.all.map(\.end) == [.clientGone])
    }

    // MARK: Ending

    @Test func aCompletionInsideTheRequestEndsTheStreamOnceAfterTheRequestReturns() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        onLoop {
            let bridge = makeBridge(writer, log: log)
            synchronousProducer(subscription, into: bridge, count: 5)
            bridge.receive(subscription: subscription)
        }
        #expect(writer.text == "P\n0\n1\n2\n3\n4\nend:completed\n")
        #expect(writer.finishes == 1)
        #expect(subscription.cancels == 0)
        #expect(log.all == [StreamSummary(events: 5, bytes: writer.text.utf8.count, end: .completed)])
    }

    @Test func aFailureInsideTheRequestWritesTheFailureFrame() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        onLoop {
            let bridge = makeBridge(writer, log: log)
            subscription.onRequest = { [unowned bridge] _ in
                _ = bridge.receive(7)
                bridge.receive(
                    completion: .failure(Problem(status: 502, type: "/problems/x", title: "x", detail: "down"))
                )
                _ = bridge.receive(8)  // after the end: dropped
            }
            bridge.receive(subscription: subscription)
        }
        #expect(writer.text == "P\n7\nerror:down\n")
        #expect(writer.finishes == 1)
        #expect(log.all.map(\.end) == [.error])
    }

    @Test func shutdownWritesItsFrameCancelsTheProducerAndFinishes() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        onLoop {
            let bridge = makeBridge(writer, log: log)
            bridge.receive(subscription: subscription)
            writer.requestShutdown()
            bridge.receive(completion: .finished)  // the producer's own end, too late
        }
        #expect(writer.text == "P\nend:shutdown\n")
        #expect(subscription.cancels == 1)
        #expect(writer.finishes == 1)
        #expect(log.all.map(\.end) == [.shutdown])
    }

    // MARK: The client leaving

    @Test func theClientLeavingMidWindowCancelsOnceAndLateValuesAreDropped() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        let bridge = onLoop { makeBridge(writer, log: log) }
        onLoop { bridge.receive(subscription: subscription) }
        // Two values of the window come from another thread (a URLSession callback, say).
        DispatchQueue.global().sync {
            _ = bridge.receive(1)
            _ = bridge.receive(2)
        }
        settle()
        onLoop { writer.clientLeaves() }
        DispatchQueue.global().sync {
            _ = bridge.receive(3)
            bridge.receive(completion: .finished)
        }
        settle()
        #expect(writer.text == "P\n1\n2\n")
        #expect(subscription.cancels == 1)
        #expect(writer.finishes == 0)
        #expect(log.all == [StreamSummary(events: 2, bytes: 6, end: .clientGone)])
    }

    @Test func theClientLeavingAsTheRequestsBatchIsSentEndsTheRequestLoop() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop, highWatermark: 1 << 20)
        let subscription = ScriptedSubscription()
        onLoop {
            let bridge = makeBridge(writer, log: log)
            synchronousProducer(subscription, into: bridge)
            writer.closesAfterNextLending = true  // the flush after the first window finds the peer gone
            bridge.receive(subscription: subscription)
        }
        #expect(subscription.requests.count == 1)
        #expect(subscription.cancels == 1)
        #expect(log.all.map(\.end) == [.clientGone])
    }

    @Test func aCancelThatCompletesAtOnceIsIgnored() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        onLoop {
            let bridge = makeBridge(writer, log: log)
            subscription.onCancel = { [unowned bridge] in
                // Re-entrant: a publisher that answers a cancel with a last value and a completion.
                _ = bridge.receive(99)
                bridge.receive(completion: .finished)
            }
            bridge.receive(subscription: subscription)
            writer.clientLeaves()
        }
        #expect(writer.text == "P\n")
        #expect(subscription.cancels == 1)
        #expect(log.all.map(\.end) == [.clientGone])
    }

    @Test func aBridgeOnAWriterThatClosedAlreadyEndsAtOnceAndCancelsItsLateSubscription() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        onLoop {
            writer.clientLeaves()
            let bridge = makeBridge(writer, log: log)
            #expect(log.all.map(\.end) == [.clientGone])
            bridge.receive(subscription: subscription)
        }
        #expect(subscription.requests.isEmpty)
        #expect(subscription.cancels == 1)
        #expect(log.all.count == 1)
    }

    // MARK: Threads

    @Test func valuesFromAnotherThreadArriveInOrder() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        let bridge = onLoop { makeBridge(writer, log: log) }
        DispatchQueue.global().sync {
            bridge.receive(subscription: subscription)  // hops onto the loop too
            for value in 0..<5000 { _ = bridge.receive(value) }
            let batch = Array(5000..<5100)
            batch.withUnsafeBufferPointer { _ = bridge.receive(batch: $0) }
            bridge.receive(completion: .finished)
        }
        settle()
        #expect(writer.text == "P\n" + Self.lines(0..<5100) + "end:completed\n")
        #expect(subscription.requests.first == 8192)
        #expect(log.all.map(\.events) == [5100])
    }

    @Test func aValueOnTheLoopWaitsBehindValuesStillHoppingToIt() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        let bridge = onLoop { makeBridge(writer, log: log) }
        onLoop { bridge.receive(subscription: subscription) }
        let held = TestSignal()
        let release = TestSignal()
        loop.execute {
            held.signal()
            _ = release.wait(timeout: .seconds(10))
            // Values 1 and 2 are queued behind this block; 3, delivered on the loop now, must follow them.
            _ = bridge.receive(3)
        }
        #expect(held.wait())
        DispatchQueue.global().sync {
            _ = bridge.receive(1)
            _ = bridge.receive(2)
        }
        release.signal()
        settle()
        settle()
        #expect(writer.text == "P\n1\n2\n3\n")
        onLoop { writer.clientLeaves() }
    }

    @Test func concurrentCancelsAndCompletionsEndTheStreamOnce() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        let bridge = onLoop { makeBridge(writer, log: log) }
        onLoop { bridge.receive(subscription: subscription) }
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            if index == 0 { bridge.receive(completion: .finished) }
            if index == 1 { loop.execute { writer.clientLeaves() } }
            if index == 2 { loop.execute { writer.requestShutdown() } }
        }
        settle()
        settle()
        #expect(log.all.count == 1)
        #expect(writer.finishes + (log.all.first?.end == .clientGone ? 1 : 0) == 1)
        #expect(subscription.cancels <= 1)
    }

    // MARK: Heartbeats

    @Test func aHeartbeatGoesOutOnlyAfterIdleTicks() {
        let log = SummaryLog()
        let writer = FakeStreamWriter(loop: loop)
        let subscription = ScriptedSubscription()
        onLoop {
            let bridge = makeBridge(writer, log: log)
            bridge.receive(subscription: subscription)
            bridge.heartbeatTick(ticksPerHeartbeat: 2)
            #expect(writer.text == "P\n")
            bridge.heartbeatTick(ticksPerHeartbeat: 2)
            #expect(writer.text == "P\nH\n")
            _ = bridge.receive(1)
            bridge.heartbeatTick(ticksPerHeartbeat: 2)  // a value since the last tick: not idle
            bridge.heartbeatTick(ticksPerHeartbeat: 2)
            #expect(writer.text == "P\nH\n1\n")
            bridge.heartbeatTick(ticksPerHeartbeat: 2)
            #expect(writer.text == "P\nH\n1\nH\n")
            writer.clientLeaves()
        }
        #expect(log.all.first?.bytes == "P\nH\n1\nH\n".utf8.count)
    }
}
