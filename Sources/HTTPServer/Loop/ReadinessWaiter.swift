import Dispatch
import Glibc

/// The thread of an ``EventLoop`` that waits in the kernel for the loop's sockets, and serves them on the loop's
/// queue from that same thread.
///
/// It blocks in `poll(2)` on the loop's epoll descriptor (readable when a registered socket is ready; `poll`
/// does not consume the readiness, so the loop's own non-blocking `epoll_wait` then sees all of it) and on an
/// `eventfd` that stops it. When sockets are ready it calls `queue.sync`: on an idle serial queue Dispatch runs
/// the block on the calling thread, so the thread the kernel woke is the one that reads and writes. The loop's
/// work keeps one order and one owner, its queue: tasks from ``EventLoop/execute(_:)``, timers and `sync` calls
/// queue up and run one at a time, whichever thread runs them.
///
/// A Dispatch read source on the epoll descriptor, which this replaces, costs two thread wake-ups per readiness:
/// Dispatch's manager thread, which waits on every source in one epoll set of its own, and then a worker thread
/// to run the handler. Each wake-up of a loop is one fewer with this thread; a publish on a channel followed
/// across replicas wakes several loops (the request, Redis's reply, each replica's announcement), and the
/// switches showed in its profile (docs/ARCHITECTURE.md, step 1 of the streaming path; bench/README.md, "Event
/// loops on threads of their own").
///
/// **Ownership:** Created by its loop, which calls ``stop()`` in its `deinit`; the thread holds the waiter and
/// the loop's ``Poller`` (so the epoll descriptor stays open until the thread has left `poll`), and the loop
/// only weakly, through `serve`.
///
/// **Thread safety:** ``stop()`` from any thread; everything else belongs to the thread.
final class ReadinessWaiter: @unchecked Sendable {  // Immutable after init; the descriptors are the kernel's.
    private let poller: Poller
    private let queue: DispatchQueue
    private let serve: @Sendable () -> Void
    /// An `eventfd` that ends the thread when written.
    private let stopFD: Int32

    /// Starts the thread.
    /// - Parameters:
    ///   - poller: The loop's epoll set.
    ///   - queue: The loop's queue, on which `serve` runs.
    ///   - name: The thread's name (its first 15 bytes: what `top -H` and `perf` show).
    ///   - serve: Serves the ready sockets; called inside `queue.sync`.
    /// - Throws: ``IOError`` if the `eventfd` or the thread cannot be created.
    init(poller: Poller, queue: DispatchQueue, name: String, serve: @escaping @Sendable () -> Void) throws(IOError) {
        self.poller = poller
        self.queue = queue
        self.serve = serve
        stopFD = Int32(
            try Syscall.blocking("eventfd") {
                Int(LinuxSymbols.eventFD(0, ReadinessWaiter.eventFDCloseOnExec | ReadinessWaiter.eventFDNonBlocking))
            }
        )
        // The thread holds the waiter (and through it the poller) until it returns.
        let context = Unmanaged.passRetained(self).toOpaque()
        let entry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { context in
            guard let context else { return nil }
            Unmanaged<ReadinessWaiter>.fromOpaque(context).takeRetainedValue().run()
            return nil
        }
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, entry, context)
        guard created == 0 else {
            Unmanaged<ReadinessWaiter>.fromOpaque(context).release()
            throw IOError(errno: created, call: "pthread_create")
        }
        // Named here, not by the thread itself: the name is set before the loop's first registration returns.
        var threadName = Array(name.utf8.prefix(15).map { CChar(bitPattern: $0) })
        threadName.append(0)
        _ = LinuxSymbols.setThreadName(thread, threadName)
        pthread_detach(thread)
    }

    deinit {
        Glibc.close(stopFD)
    }

    /// Ends the thread (once it is back in `poll`, if it is serving).
    func stop() {
        var one: UInt64 = 1
        _ = Glibc.write(stopFD, &one, MemoryLayout<UInt64>.size)
    }

    // <sys/eventfd.h>: EFD_CLOEXEC and EFD_NONBLOCK (O_CLOEXEC, O_NONBLOCK).
    private static let eventFDCloseOnExec: Int32 = 0o2_000_000
    private static let eventFDNonBlocking: Int32 = 0o4_000

    /// Waits for readiness (or the stop), serves it inside `queue.sync`, and then looks once more without
    /// blocking, after `sched_yield()`, before it waits again.
    ///
    /// That second look is for load. A loop that went back to sleep the moment it had served what was ready
    /// was woken again for the next request a few microseconds later, served one or two, and slept again: a
    /// thread switch for every few requests. Yielding lets a thread that waits for this core (a client about to
    /// send, on a machine where clients and server share cores) run first, and the look that follows finds its
    /// request without a sleep and a wake-up. When nothing came, the cost is one `sched_yield` and one `poll`
    /// per wake-up. In one run of `bench/tools/rps_alternate.sh` against the Go peer (three alternating rounds,
    /// `GET /health` and fib JSON): sleeping at once, 1.35x and 1.27x the peer's requests/s; with the second
    /// look, 1.64x and 1.68x; the Dispatch read source this replaced, 1.46x and 1.55x. Runs differ by more than
    /// rounds do on a shared machine; bench/README.md has the others.
    private func run() {
        var descriptors = [
            pollfd(fd: poller.fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0),
        ]
        var timeout: Int32 = -1  // -1 waits; 0 is the look after serving
        while true {
            let ready = Glibc.poll(&descriptors, 2, timeout)
            if ready < 0 {
                if errno == EINTR || errno == ENOMEM || errno == EAGAIN { continue }
                return  // EFAULT, EINVAL: not with these two descriptors
            }
            if ready == 0 {
                timeout = -1
                continue
            }
            if descriptors[1].revents != 0 { return }
            if descriptors[0].revents != 0 {
                queue.sync(execute: serve)
                sched_yield()
                timeout = 0
            }
        }
    }
}
