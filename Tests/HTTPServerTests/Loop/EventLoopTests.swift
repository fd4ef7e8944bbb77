import Testing
import TestSupport

@testable import HTTPServer

@Suite(.offPool) struct EventLoopTests {
    @Test func executeRunsOnTheLoopQueue() {
        let loop = EventLoop(label: "test.loop")
        #expect(!loop.inEventLoop)
        let ran = TestSignal()
        let onLoop = TestBox(false)
        loop.execute {
            onLoop.update { $0 = loop.inEventLoop }
            loop.preconditionInEventLoop()
            ran.signal()
        }
        #expect(ran.wait())
        #expect(onLoop.value)
    }

    @Test func groupHasTheRequestedLoopsAndDefaultsToOnePerCore() {
        #expect(EventLoopGroup(loopCount: 3).loops.count == 3)
        #expect(EventLoopGroup(loopCount: 0).loops.count == 1)
        #expect(EventLoopGroup().loops.count == SystemEnvironment.processorCount)
    }

    @Test func spareStorageIsLentAndReclaimed() {
        let loop = EventLoop(label: "test.spare")
        let done = TestSignal()
        loop.execute {
            var buffer = OutboundBuffer()
            buffer.append("abc" as String)
            buffer.consume(3)
            loop.reclaim(buffer.takeStorageIfEmpty()!)
            var other = OutboundBuffer()
            loop.lendSpareStorage(to: &other)
            let lent = other.storageCapacity
            #expect(lent >= OutboundBuffer.minimumAllocation)
            done.signal()
        }
        #expect(done.wait())
    }
}
