import Foundation
import Glibc
import TestSupport
import Testing

@testable import EventLoops

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
        let (watched, writer) = try Self.socketPair()
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
        #expect(Self.register(watched, target, on: loop))
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

    /// Work handed over from other threads runs on the loop's own thread, inside its queue, and in the order
    /// each thread handed it over; the thread is asleep when the first arrives, so the hand-over must wake it.
    @Test func tasksFromOtherThreadsRunOnTheLoopsThreadInTheirOrder() {
        let loop = EventLoop(label: "test.tasks")
        let perThread = 2_000
        let seen = TestBox<[[Int]]>([[], []])
        let offThread = TestBox(0)
        let done = TestSignal()
        DispatchQueue.concurrentPerform(iterations: 2) { sender in
            for index in 0..<perThread {
                loop.execute {
                    if !loop.inEventLoop || Self.currentThreadName() != "test.tasks" { offThread.update { $0 += 1 } }
                    let total = seen.update { seen in
                        seen[sender].append(index)
                        return seen[0].count + seen[1].count
                    }
                    if total == 2 * perThread { done.signal() }
                }
            }
        }
        #expect(done.wait())
        #expect(offThread.value == 0)
        #expect(seen.value[0] == Array(0..<perThread))
        #expect(seen.value[1] == Array(0..<perThread))
    }

    /// Timers run on the loop's thread, in deadline order whatever order they were scheduled in, never before
    /// their time; one scheduled sooner than the thread's current sleep wakes it.
    @Test func scheduledWorkRunsOnTheLoopsThreadInDeadlineOrderAndNotBeforeItsTime() {
        let loop = EventLoop(label: "test.timers")
        let ran = TestBox<[(delay: UInt64, late: Bool, onThread: Bool)]>([])
        let done = TestSignal()
        let delays: [UInt64] = [60, 20, 40, 0].map { $0 * 1_000_000 }
        for delay in delays {
            let start = SystemEnvironment.preciseMonotonicNanoseconds()
            loop.schedule(afterNanoseconds: delay) {
                let onThread = loop.inEventLoop && Self.currentThreadName() == "test.timers"
                let count = ran.update { ran in
                    ran.append((delay, SystemEnvironment.preciseMonotonicNanoseconds() &- start >= delay, onThread))
                    return ran.count
                }
                if count == delays.count { done.signal() }
            }
        }
        #expect(done.wait())
        #expect(ran.value.map(\.delay) == delays.sorted())
        #expect(ran.value.allSatisfy { $0.late && $0.onThread })
    }

    /// Work still queued when the loop goes is not lost: it runs on the loop's queue (through Dispatch).
    @Test func timersLeftWhenTheLoopGoesStillRun() {
        let name = "test.leftover.\(UInt32.random(in: 0..<100_000))"
        var loop: EventLoop? = EventLoop(label: name)
        let ran = TestSignal()
        loop?.schedule(afterNanoseconds: 30_000_000) { ran.signal() }
        loop = nil
        #expect(eventually { Self.threads(named: name) == 0 }, "the loop's thread outlived its loop")
        #expect(ran.wait())
    }

    /// A task that hands the loop another task, again and again, does not keep the loop from its sockets: the
    /// tasks queued during a round wait for the next, after the sockets have been looked at.
    @Test func aStreamOfTasksDoesNotStarveTheSockets() throws {
        let loop = EventLoop(label: "test.starve")
        let (watched, writer) = try Self.socketPair()
        defer {
            close(watched)
            close(writer)
        }
        let served = TestBox(false)
        let target = ReadinessProbe { _ in
            var byte: UInt8 = 0
            _ = read(watched, &byte, 1)
            served.update { $0 = true }
        }
        #expect(Self.register(watched, target, on: loop))
        // A chain of tasks that stops only once the socket was served (or after far more rounds than it needs).
        let rounds = TestBox(0)
        let chainEnded = TestSignal()
        @Sendable func link() {
            let count = rounds.update {
                $0 += 1; return $0
            }
            if served.value || count >= 5_000_000 {
                chainEnded.signal()
            } else {
                loop.execute(link)
            }
        }
        loop.execute(link)
        #expect(eventually { rounds.value > 100 })
        var byte: UInt8 = 1
        #expect(write(writer, &byte, 1) == 1)
        #expect(chainEnded.wait(timeout: .seconds(60)))
        #expect(served.value, "the chain of tasks ran \(rounds.value) rounds and the socket was never served")
        let removed = TestSignal()
        loop.execute {
            loop.deregister(watched)
            removed.signal()
        }
        #expect(removed.wait())
    }

    /// A connected pair of Unix stream sockets.
    private static func socketPair() throws -> (Int32, Int32) {
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        return (pair[0], pair[1])
    }

    /// Registers `fd` for readability with `target`, on the loop; whether it was registered in time.
    private static func register(_ fd: Int32, _ target: ReadinessProbe, on loop: EventLoop) -> Bool {
        let registered = TestSignal()
        loop.execute {
            #expect(throws: Never.self) { try loop.register(fd, target, interest: PollInterest(readable: true)) }
            registered.signal()
        }
        return registered.wait()
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
            #expect(loop.takeSpareStorage() == nil)
            let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 16)
            loop.reclaim(storage)
            let lent = loop.takeSpareStorage()
            #expect(lent?.baseAddress == storage.baseAddress)
            #expect(lent?.count == 1024)
            #expect(loop.takeSpareStorage() == nil)  // lent once: the slot is empty until handed back
            lent?.deallocate()
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
            let storage = loop.takeSpareStorage()!
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
            let borrowed = loop.takeSpareStorage()!
            borrowed[0] = 1
            loop.reclaim(borrowed)
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
