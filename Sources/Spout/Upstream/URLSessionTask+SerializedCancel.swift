import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSessionTask {
    /// Cancels the task from `session`'s delegate queue, never racing the task's own completion.
    ///
    /// **Why not `cancel()` from any thread.** On Linux, FoundationNetworking (swift-corelibs-foundation)
    /// ends a task in two steps on two queues. The session's delegate queue runs a completion operation:
    /// `guard state != .completed`, call the completion handler (or `didCompleteWithError`), set
    /// `state = .completed`, then enqueue `taskRegistry.remove(task)` on the session's private work queue.
    /// `cancel()` runs on the caller's thread: inside `workQueue.sync` it checks `state` is `.running` or
    /// `.suspended`, sets `.canceling`, looks up the task's protocol and then enqueues, on the work queue,
    /// a block that stops the protocol and reports `didFailWithError`, which looks the task up in the
    /// registry (`behaviour(for:)`) and enqueues a failure operation on the delegate queue.
    ///
    /// A `cancel()` whose state check runs while a completion operation is between its guard and
    /// `state = .completed` passes the check; if the completion operation then enqueues its registry
    /// removal before `cancel()` enqueues its block, the removal runs first, and the block's registry
    /// lookup traps: "Trying to access a behaviour for a task that in not in the registry" (or, when the
    /// two steps interleave the other way, "Trying to remove task, but it's not in the registry"). A
    /// trap kills the whole process. `bench/UpstreamCancelStress` reproduces it (both with this type's
    /// publisher before this change and with a bare `task.cancel()`); the symbols and disassembly of
    /// `libFoundationNetworking.so` (`_ProtocolClient.urlProtocolDidFinishLoading`, `urlProtocol(task:
    /// didFailWithError:)`, `URLSessionTask.cancel()`) show the steps above.
    ///
    /// **Why the delegate queue closes the window.** Every completion operation of a task with a
    /// completion handler or a delegate runs on `session.delegateQueue`. When that queue is serial
    /// (`maxConcurrentOperationCount == 1`, which is what `URLSession.shared` and
    /// `URLSession(configuration:)` create), a `cancel()` run as an operation on it cannot overlap a
    /// completion operation, so either:
    /// - a completion operation already ran: `state` is `.completed` and `cancel()` does nothing; or
    /// - none has run yet: `cancel()` sets `.canceling` and enqueues its block on the task's work queue.
    ///   That queue is the task's own serial queue *targeting* the session's work queue, where the
    ///   registry removals go directly, so being enqueued first does not make the block run first: a
    ///   completion operation that started right after a plain `cancel()` returned could still get its
    ///   removal onto the session queue ahead of it (the stress showed this, about once in 18,000
    ///   iterations). So the operation also waits for the block: a second `cancel()` is a no-op on a
    ///   `.canceling` task, but its `workQueue.sync` runs after the block. Only then does the operation
    ///   end and let completion operations run. The block has found the task still registered; of the
    ///   completion operations that follow (the load's own, if it finished meanwhile, and the
    ///   cancellation's), the first sets `.completed` and removes the task once, the other sees
    ///   `.completed` and returns.
    /// Only a serial delegate queue gives this guarantee. For a session whose delegate queue runs
    /// operations concurrently the cancel runs in a barrier block (`addBarrierBlock`: after the
    /// operations enqueued before it, before those enqueued after it), which keeps it off running
    /// completion operations, but the load's and the cancellation's completion operations may still
    /// overlap each other there; Spout's sessions all have serial delegate queues.
    ///
    /// **Cost.** The cancel waits behind the operations already queued on the delegate queue (other
    /// tasks' completion handlers), usually microseconds; the task keeps its connection until then.
    /// Callers that must stop delivery at once do so with their own state before calling this (as
    /// `DataTaskPublisher`'s subscription does).
    ///
    /// - Parameter session: The session that created the task (its delegate queue runs the cancel).
    func cancelAfterQueuedCompletions(in session: URLSession) {
        let queue = session.delegateQueue
        let task = UncheckedTask(task: self)
        if queue.maxConcurrentOperationCount == 1 {
            queue.addOperation { task.cancelAndDrain() }
        } else {
            queue.addBarrierBlock { task.cancelAndDrain() }
        }
    }
}

/// A task carried into a delegate-queue operation.
///
/// **Thread safety:** `@unchecked Sendable` — audited: no lock needed because `URLSessionTask` is
/// thread-safe in swift-corelibs-foundation (its state is guarded by its own queues), and the only
/// call made through it is `cancel()`.
private struct UncheckedTask: @unchecked Sendable {
    let task: URLSessionTask

    /// Cancels the task and returns only once the block `cancel()` enqueued on the task's work queue
    /// has run; see ``URLSessionTask/cancelAfterQueuedCompletions(in:)``.
    func cancelAndDrain() {
        task.cancel()
        // `cancel()` does its work in `workQueue.sync`; the second call's sync block is queued behind
        // the first call's async block (a serial queue is FIFO), so it returns after that block ran. On a
        // task already `.canceling` or `.completed` it changes nothing.
        task.cancel()
    }
}
