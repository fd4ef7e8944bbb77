import Foundation
import Glibc
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

    /// Readiness is served on the loop's own thread (named after the loop), inside the loop's queue: the
    /// thread the kernel woke runs the handler, with no hand-off to a Dispatch worker.
    @Test func readinessIsServedOnTheLoopsOwnThreadInsideItsQueue() throws {
        let loop = EventLoop(label: "test.ready")
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let (watched, writer) = (pair[0], pair[1])
        defer {
            close(watched)
            close(writer)
        }
        let served = TestSignal()
        let target = ReadinessProbe { probe in
            var byte: UInt8 = 0
            _ = read(watched, &byte, 1)
            probe.threadName = Self.currentThreadName()
            probe.onLoop = loop.inEventLoop
            served.signal()
        }
        let registered = TestSignal()
        loop.execute {
            #expect(throws: Never.self) { try loop.register(watched, target, interest: PollInterest(readable: true)) }
            registered.signal()
        }
        #expect(registered.wait())
        var byte: UInt8 = 1
        #expect(write(writer, &byte, 1) == 1)
        #expect(served.wait())
        #expect(target.threadName == "test.ready")
        #expect(target.onLoop)
        let removed = TestSignal()
        loop.execute {
            loop.deregister(watched)
            removed.signal()
        }
        #expect(removed.wait())
    }

    /// The loop's thread ends when the loop goes: servers come and go (tests start hundreds) without leaving
    /// a thread blocked in `poll` behind each.
    @Test func theLoopsThreadEndsWithTheLoop() {
        let name = "test.ends.\(UInt32.random(in: 0..<100_000))"
        var loop: EventLoop? = EventLoop(label: name)
        let prepared = TestSignal()
        loop?.execute { [loop] in
            #expect(throws: Never.self) { try loop?.preparePoller() }
            prepared.signal()
        }
        #expect(prepared.wait())
        #expect(Self.threads(named: name) == 1)
        loop = nil
        #expect(eventually { Self.threads(named: name) == 0 }, "the loop's thread outlived its loop")
    }

    /// The name of the calling thread.
    private static func currentThreadName() -> String {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }

    /// How many threads of this process are named `name` (its first 15 bytes, as the kernel keeps it).
    private static func threads(named name: String) -> Int {
        let short = String(name.utf8.prefix(15))!
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
            return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == short
        }.count
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

/// A poll target that runs `onReady` and keeps what it saw.
private final class ReadinessProbe: PollTarget, @unchecked Sendable {  // Written on the loop, read after a signal.
    var threadName = ""
    var onLoop = false
    private let onReady: (ReadinessProbe) -> Void

    init(_ onReady: @escaping (ReadinessProbe) -> Void) { self.onReady = onReady }

    func pollReady(_ event: PollEvent) { onReady(self) }
}
