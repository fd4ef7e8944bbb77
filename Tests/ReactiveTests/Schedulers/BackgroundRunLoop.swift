import Foundation
import Reactive
import TestSupport

/// A Foundation run loop running on its own thread, for tests of run-loop timers.
///
/// **Ownership:** the thread runs until ``stop()``.
///
/// **Thread safety:** safe to call from any thread.
final class BackgroundRunLoop: @unchecked Sendable {
    // @unchecked Sendable: `stopped` is guarded by `lock`; `runLoop` is set once before `init` returns
    // and RunLoop's timer registration is thread-safe.
    private let lock = Lock()
    private var stopped = false  // Guarded by lock.
    private(set) var runLoop: RunLoop!

    init() {
        let ready = TestSignal()
        let thread = Thread { [self] in
            let current = RunLoop.current
            // A far-off repeating timer keeps the loop from returning at once for lack of sources.
            current.add(Timer(timeInterval: 3_600, repeats: true) { _ in }, forMode: .default)
            runLoop = current
            ready.signal()
            while !lock.withLock({ stopped }) {
                _ = current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
            }
        }
        thread.start()
        // A thread that has not started its loop in a minute is a broken machine, not a slow one.
        precondition(ready.wait(timeout: .seconds(60)), "the run loop thread did not start")
    }

    func stop() {
        lock.withLock { stopped = true }
    }
}
