import Dispatch
import Foundation
import Reactive
import Synchronization
import TestSupport
import Testing

@Suite(.offPool) struct DispatchQueueSchedulerTests {
    @Test func runsActionAfterTheDeadlineOnTheQueue() {
        let queue = DispatchQueue(label: "scheduler-test")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let done = TestSignal()
        let start = queue.now
        let observed = LockedValue<(onQueue: Bool, late: Bool)>((false, false))
        queue.schedule(after: start.advanced(by: .milliseconds(20))) {
            let elapsed = start.distance(to: queue.now)
            observed.withLock { $0 = (DispatchQueue.getSpecific(key: key) == 7, elapsed >= .milliseconds(20)) }
            done.signal()
        }
        #expect(done.wait(timeout: .seconds(10)))
        #expect(observed.withLock { $0.onQueue && $0.late })
    }

    @Test func scheduleNowRunsOnTheQueueAndJoinsTheGroup() {
        let queue = DispatchQueue(label: "scheduler-test-group")
        let group = DispatchGroup()
        let ran = LockedValue(false)
        queue.schedule(options: .init(qos: .userInitiated, group: group)) { ran.withLock { $0 = true } }
        OffPool.checkMayBlock("DispatchGroup.wait")
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(ran.withLock { $0 })
    }

    @Test func repeatingActionStopsWhenCancelled() {
        let queue = DispatchQueue(label: "scheduler-test-repeat")
        let fired = TestSignal()
        let count = LockedValue(0)
        let cancellable = queue.schedule(after: queue.now, interval: .milliseconds(5)) {
            count.withLock { $0 += 1 }
            fired.signal()
        }
        for _ in 0..<3 { #expect(fired.wait(timeout: .seconds(10))) }
        cancellable.cancel()
        queue.sync {}
        let afterCancel = count.withLock { $0 }
        queue.sync {}
        #expect(afterCancel >= 3)
    }

    @Test func strideConversionsAndLiterals() {
        typealias Stride = DispatchQueue.SchedulerTimeType.Stride
        #expect(Stride.seconds(2).magnitude == 2_000_000_000)
        #expect(Stride.seconds(0.5).magnitude == 500_000_000)
        #expect(Stride.milliseconds(3).magnitude == 3_000_000)
        #expect(Stride.microseconds(4).magnitude == 4_000)
        #expect(Stride.nanoseconds(5).magnitude == 5)
        let fromInteger: Stride = 1
        let fromFloat: Stride = 1.5
        #expect(fromInteger == .seconds(1))
        #expect(fromFloat == .milliseconds(1_500))
        #expect(Stride(.seconds(Int.max)).magnitude == Int.max)
        #expect((Stride.seconds(1) + .milliseconds(1)).magnitude == 1_001_000_000)
        #expect(Stride(exactly: 2) == .seconds(2))
        if case .nanoseconds(let ns) = Stride.milliseconds(1).timeInterval {
            #expect(ns == 1_000_000)
        } else {
            Issue.record("timeInterval is not in nanoseconds")
        }
    }

    @Test func timeTypeDistanceAdvanceAndCodable() throws {
        let time = DispatchQueue.SchedulerTimeType(DispatchTime(uptimeNanoseconds: 10_000))
        let later = time.advanced(by: .nanoseconds(500))
        #expect(later.dispatchTime.uptimeNanoseconds == 10_500)
        #expect(time.distance(to: later) == .nanoseconds(500))
        #expect(later.distance(to: time) == .nanoseconds(-500))
        #expect(time.advanced(by: .nanoseconds(-20_000)).dispatchTime.uptimeNanoseconds == 1)
        let decoded = try JSONDecoder().decode(
            DispatchQueue.SchedulerTimeType.self,
            from: JSONEncoder().encode(later)
        )
        #expect(decoded == later)
        #expect(Set([time, later, decoded]).count == 2)
    }
}

@Suite(.offPool) struct RunLoopSchedulerTests {
    @Test func runsActionOnTheRunLoopThread() {
        let background = BackgroundRunLoop()
        defer { background.stop() }
        let done = TestSignal()
        let runLoop = background.runLoop!
        let sameLoop = LockedValue(false)
        nonisolated(unsafe) let expected = runLoop
        runLoop.schedule(after: runLoop.now.advanced(by: .milliseconds(10))) {
            sameLoop.withLock { $0 = RunLoop.current === expected }
            done.signal()
        }
        #expect(done.wait(timeout: .seconds(10)))
        #expect(sameLoop.withLock { $0 })
    }

    @Test func repeatingActionFiresUntilCancelled() {
        let background = BackgroundRunLoop()
        defer { background.stop() }
        let fired = TestSignal()
        let cancellable = background.runLoop.schedule(
            after: background.runLoop.now,
            interval: .milliseconds(5)
        ) { fired.signal() }
        for _ in 0..<3 { #expect(fired.wait(timeout: .seconds(10))) }
        cancellable.cancel()
    }

    @Test func strideIsInSeconds() {
        typealias Stride = RunLoop.SchedulerTimeType.Stride
        #expect(Stride.milliseconds(250).magnitude == 0.25)
        #expect(Stride.seconds(3).timeInterval == 3)
        let start = RunLoop.SchedulerTimeType(Date(timeIntervalSince1970: 100))
        #expect(start.advanced(by: .seconds(2)).date == Date(timeIntervalSince1970: 102))
        #expect(start.distance(to: start.advanced(by: 1.5)) == 1.5)
    }
}
