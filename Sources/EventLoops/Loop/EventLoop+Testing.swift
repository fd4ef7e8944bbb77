import Dispatch
import Glibc

extension EventLoop {
    /// The bytes of the spare storage, and of them the bytes in whole pages that are resident (`mincore`;
    /// the partial pages at its ends are shared with other allocations and not counted). For tests.
    package var spareStorageBytes: (capacity: Int, resident: Int) {
        preconditionInEventLoop()
        guard let spare = spareStorage else { return (0, 0) }
        guard let pages = EventLoop.wholePages(of: spare) else { return (spare.count, 0) }
        var residency = [UInt8](repeating: 0, count: pages.count / EventLoop.pageBytes)
        guard mincore(pages.baseAddress, pages.count, &residency) == 0 else { return (spare.count, -1) }
        return (spare.count, residency.reduce(0) { $0 &+ Int($1 & 1) } &* EventLoop.pageBytes)
    }
}

extension EventLoop {
    /// Runs `body` on the loop as a task handed over now, and waits for it: what was handed over before (hops
    /// included) has run by then, as with `queue.sync` on a loop whose work all went through its queue. Blocks
    /// the calling thread; never call it on the loop. For tests.
    package func runAndWait<R>(_ body: () throws -> R) rethrows -> R {
        precondition(!inEventLoop, "runAndWait on its own loop would wait for itself")
        return try withoutActuallyEscaping(body) { body in
            let handOff = TaskHandOff(body)
            execute { handOff.run() }
            handOff.done.wait()
            return try handOff.result!.get()
        }
    }
}

/// A test's closure and its result, crossing to the loop and back. // Written on the loop before `done` is
/// signalled, read by the waiting thread after.
private final class TaskHandOff<R>: @unchecked Sendable {
    /// Let go before `done` is signalled: the loop's thread may still hold the task (and so this object) for a
    /// moment, and the closure must not outlive `withoutActuallyEscaping`.
    private var body: (() throws -> R)?
    var result: Result<R, any Error>?
    let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping () throws -> R) { self.body = body }

    func run() {
        if let body { result = Result { try body() } }
        body = nil
        done.signal()
    }
}
