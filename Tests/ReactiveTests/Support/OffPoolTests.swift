import Dispatch
import Foundation
import Glibc
import TestSupport
import Testing

/// The `.offPool` trait: where a test's code runs, and the check that catches a blocking wait on the
/// cooperative pool.
@Suite(.offPool, .enabled(if: OffPool.width > 0)) struct OffPoolTraitTests {
    @Test func aSynchronousTestRunsOnItsOwnThread() {
        #expect(OffPool.isOnTestThread)
    }

    @Test func anAsyncTestStaysOnItsThreadAcrossSuspensions() async {
        let before = pthread_self()
        #expect(OffPool.isOnTestThread)
        await Task.yield()
        #expect(pthread_equal(pthread_self(), before) != 0)
        // Resumed from a Dispatch thread, the test still continues on its own.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { continuation.resume() }
        }
        #expect(pthread_equal(pthread_self(), before) != 0)
        #expect(OffPool.isOnTestThread)
    }

    @Test(arguments: 0..<3) func eachCaseOfAParameterizedTestGetsAThread(_ index: Int) {
        #expect(OffPool.isOnTestThread)
    }

    @Test func anUnstructuredTaskRunsOnTheGlobalPool() async {
        // A test may block its thread while a `Task {}` it started makes progress.
        let signal = TestSignal()
        let onTestThread = Task {
            defer { signal.signal() }
            return OffPool.isOnTestThread
        }
        #expect(signal.wait(timeout: .seconds(30)))
        #expect(await onTestThread.value == false)
    }

    @Test func blockingOnTheTestThreadIsAllowed() {
        #expect(!OffPool.checkMayBlock("a test's own wait"))
    }

    @Test func blockingOnAPlainThreadIsAllowed() {
        let recorded = TestBox<Bool?>(nil)
        let done = TestSignal()
        let thread = Thread {
            recorded.update { $0 = OffPool.checkMayBlock("a plain thread's wait") }
            done.signal()
        }
        thread.start()
        #expect(done.wait(timeout: .seconds(30)))
        #expect(recorded.value == false)
    }
}

/// A suite without the trait: its tests run on the cooperative pool.
@Suite struct OffPoolCheckTests {
    @Test(.enabled(if: OffPool.width > 0)) func blockingOnThePoolIsAnIssue() {
        #expect(!OffPool.isOnTestThread)
        withKnownIssue {
            #expect(OffPool.checkMayBlock("a wait on the pool"))
        }
    }
}
