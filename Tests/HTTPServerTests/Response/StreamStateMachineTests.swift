import Testing

@testable import HTTPServer

/// Every transition of an open stream: writable ⇄ notWritable, either → finishing.
@Suite struct StreamStateMachineTests {
    private typealias Machine = StreamStateMachine

    private static let fixed = AdaptiveWatermark.Settings(
        maximumBytes: 1000,
        minimumBytes: 1000,
        lowBytes: 100,
        adapts: false
    )
    private static let adaptive = AdaptiveWatermark.Settings(
        maximumBytes: 64 * 1024,
        minimumBytes: 4096,
        lowBytes: 1024,
        adapts: true
    )

    @Test func aNewStreamIsWritableUpToTheHighWatermark() {
        let machine = Machine(mode: .chunked, watermark: Self.fixed)
        #expect(machine.phase == .writable)
        #expect(machine.isWritable)
        #expect(machine.writableBytes(buffered: 0) == 1000)
        #expect(machine.writableBytes(buffered: 999) == 1)
        #expect(machine.writableBytes(buffered: 5000) == 0)
    }

    @Test func reachingTheHighWatermarkSendsNowAndTurnsNotWritable() {
        var machine = Machine(mode: .chunked, watermark: Self.fixed)
        #expect(machine.bodyAppended(buffered: 999) == .none)
        #expect(machine.isWritable)
        #expect(machine.bodyAppended(buffered: 1000) == .sendNow)
        #expect(machine.phase == .notWritable)
        #expect(machine.writableBytes(buffered: 0) == 0)
        // More bytes while not writable (a frame that had to go out) still leave at once.
        #expect(machine.bodyAppended(buffered: 1200) == .sendNow)
        #expect(machine.phase == .notWritable)
    }

    @Test func theWritableEdgeComesAtTheLowWatermarkOnce() {
        var machine = Machine(mode: .chunked, watermark: Self.fixed)
        _ = machine.bodyAppended(buffered: 1000)
        #expect(machine.flushed(sent: 800, buffered: 200, readerKeptUp: { false }) == .none)
        #expect(machine.phase == .notWritable)
        #expect(machine.flushed(sent: 100, buffered: 100, readerKeptUp: { false }) == .notifyWritable)
        #expect(machine.phase == .writable)
        #expect(machine.flushed(sent: 100, buffered: 0, readerKeptUp: { true }) == .none)  // no second edge
    }

    @Test func aWatermarkThatDropsBelowTheQueueTurnsTheStreamNotWritable() {
        var machine = Machine(mode: .chunked, watermark: Self.adaptive)
        // Two flushes the reader kept up with: 4 KiB → 8 KiB → 16 KiB.
        _ = machine.flushed(sent: 4096, buffered: 0, readerKeptUp: { true })
        _ = machine.flushed(sent: 4096, buffered: 0, readerKeptUp: { true })
        #expect(machine.watermark.highBytes == 16 * 1024)
        #expect(machine.bodyAppended(buffered: 6000) == .none)
        // A short send: back to 4 KiB, below the 5,000 bytes still queued.
        #expect(
            machine.flushed(
                sent: 1000,
                buffered: 5000,
                readerKeptUp: {
                    Issue.record("not asked"); return true
                }
            ) == .none
        )
        #expect(machine.phase == .notWritable)
        #expect(machine.flushed(sent: 5000, buffered: 0, readerKeptUp: { false }) == .notifyWritable)
    }

    @Test func aTrickleTakenWholeGrowsTheWatermarkWithoutAskingTheKernel() {
        var machine = Machine(mode: .chunked, watermark: Self.adaptive)
        let notAsked: () -> Bool = {
            Issue.record("not asked")
            return true
        }
        // Small flushes (under half the watermark) the kernel took whole: 4 KiB → 8 KiB → 16 KiB, no question.
        for (sent, high) in [(60, 8192), (4095, 16384), (0, 16384)] {
            #expect(machine.flushed(sent: sent, buffered: 0, readerKeptUp: notAsked) == .none)
            #expect(machine.watermark.highBytes == high)
        }
        // Half the watermark: the kernel is asked, and bytes waiting there drop it to the minimum.
        var asked = 0
        _ = machine.flushed(sent: 8192, buffered: 0) {
            asked += 1
            return false
        }
        #expect(asked == 1)
        #expect(machine.watermark.highBytes == 4096)
        // A trickle the kernel refused part of falls back to the minimum too, without asking.
        _ = machine.flushed(sent: 60, buffered: 0, readerKeptUp: notAsked)
        #expect(machine.watermark.highBytes == 8192)
        _ = machine.flushed(sent: 10, buffered: 50, readerKeptUp: notAsked)
        #expect(machine.watermark.highBytes == 4096)
    }

    @Test func shutdownAsksTheProducerOnceAndStopsWritability() {
        for start in [Machine.Phase.writable, .notWritable] {
            var machine = Machine(mode: .chunked, watermark: Self.fixed)
            if start == .notWritable { _ = machine.bodyAppended(buffered: 1000) }
            #expect(machine.shutdownRequested() == .notifyShutdown)
            #expect(machine.phase == .finishing)
            #expect(!machine.isWritable)
            #expect(machine.writableBytes(buffered: 0) == 0)
            #expect(machine.shutdownRequested() == .none)
            // The last frame still goes out, and draining brings no writable edge.
            #expect(machine.bodyAppended(buffered: 1000) == .sendNow)
            #expect(machine.flushed(sent: 1000, buffered: 0, readerKeptUp: { true }) == .none)
            #expect(machine.phase == .finishing)
        }
    }
}
