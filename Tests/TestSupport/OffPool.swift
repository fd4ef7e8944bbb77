import Foundation
import Reactive
import Synchronization
import Testing

/// Runs each test of the suite (or the test) it is attached to on a thread of its own, off Swift's
/// cooperative pool, so a test may block that thread (a semaphore wait, a blocking socket read with a
/// `poll(2)` deadline) without taking a pool thread from the tests that need one.
///
/// Swift Testing runs every test function, synchronous ones included, on the cooperative pool, which
/// has one thread per core: two on CI. Two tests blocked in a wait would hold the whole pool, and an
/// async test (or a `URLSession` completion bridged into a task) would wait for a thread for as long
/// as they block. Under this trait the test body runs under a task executor preference for a
/// dedicated thread: synchronous code and nonisolated async code of the test run there, and a
/// suspension frees that thread only.
///
/// At most ``OffPool/width`` such tests run at once (the others wait suspended, holding no thread),
/// so the suite's parallelism stays what the machine can serve.
///
/// Child tasks of the test (`async let`, task groups) inherit the preference and share the test's
/// thread, so one of them must not block waiting for another; an unstructured `Task {}` runs on the
/// global pool as usual.
///
///     @Suite(.offPool) struct ShutdownTests { ... }
///
/// Blocking helpers (``TestSignal/wait(timeout:)``, ``LoopbackClient``) check that they do not run
/// on a task outside such a thread, and record an issue if they do.
public struct OffPoolTrait: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    /// Whether a test waits for one of the ``OffPool/width`` slots before it runs.
    public var isLimited: Bool

    public init(limited: Bool = true) {
        isLimited = limited
    }

    /// One scope per test case; none around a whole suite.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        if OffPool.isActive || OffPool.width == 0 {  // nested suites both carrying the trait; or disabled
            try await function()
            return
        }
        if isLimited { await OffPool.slots.acquire() }
        defer { if isLimited { OffPool.slots.release() } }
        let executor = TestThreadExecutor(name: test.name)
        defer { executor.stop() }
        try await OffPool.$isActive.withValue(true) {
            try await withTaskExecutorPreference(executor) {
                try await function()
            }
        }
    }
}

extension Trait where Self == OffPoolTrait {
    /// Runs each test on a thread of its own, off the cooperative pool (see ``OffPoolTrait``).
    public static var offPool: Self { Self() }

    /// Runs each test on a thread of its own, off the cooperative pool, without waiting for a slot:
    /// for a `.serialized` suite (one test at a time already) whose tests have a time limit, which
    /// would count the wait for a slot behind other suites' slow tests.
    public static func offPool(limited: Bool) -> Self { Self(limited: limited) }
}

/// The state shared by the tests running under ``OffPoolTrait``.
public enum OffPool {
    /// How many off-pool tests run at once: twice the cores, at least four. Tests mostly wait on
    /// loopback I/O, so a few more than the cores keep both busy without crowding them.
    /// `SPOUT_TEST_OFF_POOL_WIDTH` overrides it for measurements; `0` turns the trait off (every
    /// test on the cooperative pool, as without it).
    public static let width: Int = {
        if let text = ProcessInfo.processInfo.environment["SPOUT_TEST_OFF_POOL_WIDTH"], let width = Int(text) {
            return max(0, width)
        }
        return max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
    }()

    static let slots = AsyncSlots(max(1, width))

    /// Whether the current task runs a test under ``OffPoolTrait``.
    @TaskLocal static var isActive = false

    /// The key of the thread-specific flag set on the threads of ``TestThreadExecutor``.
    private static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static func markCurrentThread() {
        pthread_setspecific(threadKey, UnsafeRawPointer(bitPattern: 1))
    }

    /// Whether the current thread is a test's own thread.
    public static var isOnTestThread: Bool {
        pthread_getspecific(threadKey) != nil
    }

    /// Records an issue when the caller is about to block a thread of the cooperative pool: it runs
    /// inside a task, on a thread that is not a test's own. Blocking on any other thread (an event
    /// loop, a `DispatchQueue`, a `Thread`) is not this check's business.
    /// - Returns: Whether it recorded an issue.
    @discardableResult
    public static func checkMayBlock(
        _ what: String,
        fileID: String = #fileID,
        filePath: String = #filePath,
        line: Int = #line,
        column: Int = #column
    ) -> Bool {
        guard width > 0, !isOnTestThread, withUnsafeCurrentTask(body: { $0 != nil }) else { return false }
        Issue.record(
            "\(what) blocks a thread of the cooperative pool; mark the suite `.offPool`",
            sourceLocation: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        )
        return true
    }
}

/// A counting semaphore for tasks: waiting suspends, it holds no thread.
///
/// **Thread safety:** safe to call from any thread (a `Mutex`).
final class AsyncSlots: Sendable {
    private let state: LockedState<(free: Int, waiting: [CheckedContinuation<Void, Never>])>

    init(_ count: Int) {
        state = LockedState((count, []))
    }

    /// Takes a slot, suspending until one is free.
    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    /// Gives a slot back, to the longest waiter if there is one.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

/// A task executor with one thread of its own, which runs its jobs in order; the thread ends after
/// ``stop()`` once no job is left. A job enqueued after that runs on a global queue.
///
/// **Ownership:** the thread keeps the executor alive until it ends.
///
/// **Thread safety:** safe to call from any thread; `jobs` and the flags are guarded by `condition`.
final class TestThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: every stored var is only touched with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []  // Guarded by condition.
    private var isStopping = false  // Guarded by condition.
    private var hasEnded = false  // Guarded by condition.

    init(name: String) {
        let thread = Thread { [self] in run() }
        thread.name = "test \(name)"
        thread.stackSize = 8 << 20
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        let ended = hasEnded
        if !ended {
            jobs.append(job)
            condition.signal()
        }
        condition.unlock()
        if ended {
            let executor = asUnownedTaskExecutor()
            DispatchQueue.global().async { job.runSynchronously(on: executor) }
        }
    }

    /// Lets the thread end once its queue is empty.
    func stop() {
        condition.lock()
        isStopping = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        OffPool.markCurrentThread()
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty && !isStopping { condition.wait() }
            if jobs.isEmpty {
                hasEnded = true
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: executor)
        }
    }
}
