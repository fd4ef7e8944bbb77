import TestSupport
import Testing

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

    @Test func storageReclaimedFromAStallIsKeptWithoutResidentPages() {
        let loop = EventLoop(label: "test.release")
        let done = TestSignal()
        loop.execute {
            let bytes = 64 * 1024
            let kept = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes, alignment: 16)
            kept.initializeMemory(as: UInt8.self, repeating: 0xAB)
            loop.reclaim(kept)  // an ordinary hand-back: kept as the spare, pages untouched
            let before = loop.spareStorageBytes
            #expect(before.capacity == bytes)
            #expect(before.resident >= bytes - 8 * 1024)  // all but the (uncounted) partial end pages
            var borrower = OutboundBuffer()
            loop.lendSpareStorage(to: &borrower)
            let storage = borrower.takeStorageIfEmpty()!
            loop.reclaim(storage, releasingPages: true)
            let after = loop.spareStorageBytes
            #expect(after.capacity == bytes)
            #expect(after.resident == 0)
            // The released pages read as zeros: their contents went back to the kernel.
            #expect(kept[bytes / 2] == 0)
            #expect(kept[8 * 1024] == 0)
            done.signal()
        }
        #expect(done.wait())
    }

    @Test func aSpareNobodyUsesBetweenTwoChecksLosesItsResidentPages() {
        let loop = EventLoop(label: "test.idle")
        let done = TestSignal()
        loop.execute {
            let bytes = 64 * 1024
            let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes, alignment: 16)
            storage.initializeMemory(as: UInt8.self, repeating: 0xCD)
            loop.reclaim(storage)
            loop.releaseIdleSpare()  // handed back since the last check: kept resident
            #expect(loop.spareStorageBytes.resident >= bytes - 8 * 1024)
            var borrower = OutboundBuffer()
            loop.lendSpareStorage(to: &borrower)
            borrower.append(UInt8(1))
            borrower.consume(1)
            loop.reclaim(borrower.takeStorageIfEmpty()!)
            loop.releaseIdleSpare()  // lent and handed back again: still in use
            #expect(loop.spareStorageBytes.resident >= bytes - 8 * 1024)
            loop.releaseIdleSpare()  // untouched for a whole interval: released
            let idle = loop.spareStorageBytes
            #expect(idle.capacity == bytes)
            #expect(idle.resident == 0)
            done.signal()
        }
        #expect(done.wait())
    }
}
