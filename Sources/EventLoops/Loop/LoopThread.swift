import Dispatch
import Glibc

/// The thread of an ``EventLoop``: it waits in the kernel for the loop's sockets, for work other threads hand
/// the loop (``EventLoop/execute(_:)``) and for the loop's timers (``EventLoop/schedule(afterNanoseconds:_:)``),
/// and runs all three on the loop's queue, from this same thread.
///
/// It blocks in `ppoll(2)` on the loop's epoll descriptor (readable when a registered socket is ready; `ppoll`
/// does not consume the readiness, so the loop's own non-blocking `epoll_wait` then sees all of it) and on an
/// `eventfd` that other threads write to wake it, with the nearest timer as the timeout. When something is due
/// it calls `queue.sync`: on an idle serial queue Dispatch runs the block on the calling thread, so the thread
/// the kernel woke is the one that reads, writes and runs the tasks. The loop's work keeps one owner, its
/// queue; what other code still sends to the queue directly (Dispatch timer sources, `sync` from tests) queues
/// up with it and runs one block at a time, whichever thread runs it.
///
/// Why a thread of its own rather than Dispatch: a Dispatch read source on the epoll descriptor costs two thread
/// wake-ups per readiness (Dispatch's manager thread, which waits on every source in one epoll set of its own,
/// then a worker to run the handler), and every `queue.async` from another thread wakes a worker, which then
/// competes with the loop for the queue. A publish on a channel followed across replicas wakes several loops
/// (the request, Redis's reply, each replica's announcement, each loop's fan-out), and the switches showed in
/// its profile (docs/ARCHITECTURE.md, step 1 of the streaming path; bench/README.md, "Event loops on threads of
/// their own").
///
/// A task handed over while the thread is awake (serving, or running tasks) costs an append under the lock; only
/// one that finds it asleep writes the `eventfd`. Tasks run in the order they were handed over, each round's
/// after the sockets it found ready; tasks queued while a round runs wait for the next round, after the sockets
/// have been looked at again, so a stream of tasks cannot starve the sockets or the other way round.
///
/// **Ownership:** Created by its loop, which calls ``stop()`` in its `deinit`; the thread holds this object and,
/// once attached, the loop's ``Poller`` (so the epoll descriptor stays open until the thread has left `ppoll`),
/// and the loop only weakly, through `serve`. Work still queued when the loop goes is handed to the queue
/// (Dispatch), so none is lost.
///
/// **Thread safety:** ``enqueue(_:)``, ``schedule(at:_:)``, ``attach(_:serve:)`` and ``stop()`` from any thread
/// (`mutex` guards the shared state); the rest belongs to the thread.
final class LoopThread: @unchecked Sendable {  // Shared state under `mutex`; the descriptor is the kernel's.
    private let queue: DispatchQueue
    /// An `eventfd` that other threads write to wake the thread.
    private let wakeFD: Int32
    /// A `pthread_mutex_t` rather than `Synchronization.Mutex`: ThreadSanitizer sees it.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    // Guarded by `mutex`:
    private var tasks: [@Sendable () -> Void] = []
    private var timers = LoopTimers()
    private var poller: Poller?
    private var serve: (@Sendable () -> Void)?
    /// Whether the thread is in (or about to enter) a `ppoll` that waits, and until when: a task, or a timer
    /// due sooner, must wake it.
    private var sleepsUntil: UInt64?
    private var stopped = false

    /// Starts the thread.
    /// - Parameters:
    ///   - queue: The loop's queue, on which everything runs.
    ///   - name: The thread's name (its first 15 bytes: what `top -H` and `perf` show).
    /// - Throws: ``IOError`` if the `eventfd` or the thread cannot be created.
    init(queue: DispatchQueue, name: String) throws(IOError) {
        self.queue = queue
        wakeFD = Int32(
            try Syscall.blocking("eventfd") {
                Int(LinuxSymbols.eventFD(0, LoopThread.eventFDCloseOnExec | LoopThread.eventFDNonBlocking))
            }
        )
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        // The thread holds this object until it returns.
        let context = Unmanaged.passRetained(self).toOpaque()
        let entry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { context in
            guard let context else { return nil }
            Unmanaged<LoopThread>.fromOpaque(context).takeRetainedValue().run()
            return nil
        }
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, entry, context)
        guard created == 0 else {
            Unmanaged<LoopThread>.fromOpaque(context).release()
            throw IOError(errno: created, call: "pthread_create")
        }
        // Named here, not by the thread itself: the name is set before the loop's initializer returns.
        var threadName = Array(name.utf8.prefix(15).map { CChar(bitPattern: $0) })
        threadName.append(0)
        _ = LinuxSymbols.setThreadName(thread, threadName)
        pthread_detach(thread)
    }

    deinit {
        Glibc.close(wakeFD)
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    // MARK: Any thread

    /// Runs `work` on the queue, on this thread, after what was handed over before it.
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        if stopped {
            pthread_mutex_unlock(mutex)
            queue.async(execute: work)
            return
        }
        tasks.append(work)
        let wake = sleepsUntil != nil
        sleepsUntil = nil
        pthread_mutex_unlock(mutex)
        if wake { self.wake() }
    }

    /// Runs `work` on the queue, on this thread, once the precise monotonic clock
    /// (``SystemEnvironment/preciseMonotonicNanoseconds()``) reads `deadline`.
    func schedule(at deadline: UInt64, _ work: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        if stopped {
            pthread_mutex_unlock(mutex)
            Self.handOver(deadline: deadline, work, to: queue)
            return
        }
        timers.add(deadline: deadline, work)
        var wake = false
        if let until = sleepsUntil, deadline < until {
            sleepsUntil = nil
            wake = true
        }
        pthread_mutex_unlock(mutex)
        if wake { self.wake() }
    }

    /// Starts waiting for `poller`'s sockets, serving them with `serve` (inside `queue.sync`).
    func attach(_ poller: Poller, serve: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        self.poller = poller
        self.serve = serve
        sleepsUntil = nil
        pthread_mutex_unlock(mutex)
        wake()
    }

    /// Ends the thread (once it is back from serving, if it is); work still queued goes to the queue.
    func stop() {
        pthread_mutex_lock(mutex)
        stopped = true
        pthread_mutex_unlock(mutex)
        wake()
    }

    private func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, MemoryLayout<UInt64>.size)
    }

    private static func handOver(deadline: UInt64, _ work: @escaping @Sendable () -> Void, to queue: DispatchQueue) {
        let now = SystemEnvironment.preciseMonotonicNanoseconds()
        let delay = deadline > now ? deadline &- now : 0
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: delay)), execute: work)
    }

    // <sys/eventfd.h>: EFD_CLOEXEC and EFD_NONBLOCK (O_CLOEXEC, O_NONBLOCK).
    private static let eventFDCloseOnExec: Int32 = 0o2_000_000
    private static let eventFDNonBlocking: Int32 = 0o4_000

    // MARK: The thread

    /// Stops taking work and hands what is queued to the queue (Dispatch): tasks at once, timers at their time.
    private func retire() {
        pthread_mutex_lock(mutex)
        stopped = true
        let left = tasks
        let timed = timers.takeAll()
        tasks = []
        pthread_mutex_unlock(mutex)
        for work in left { queue.async(execute: work) }
        for timer in timed { Self.handOver(deadline: timer.deadline, timer.work, to: queue) }
    }

    /// Waits for readiness, tasks or the next timer; runs what is due inside `queue.sync`; after serving
    /// sockets, looks once more without blocking, after `sched_yield()`, before it waits again.
    ///
    /// That second look is for load. A loop that went back to sleep the moment it had served what was ready
    /// was woken again for the next request a few microseconds later, served one or two, and slept again: a
    /// thread switch for every few requests. Yielding lets a thread that waits for this core (a client about to
    /// send, on a machine where clients and server share cores) run first, and the look that follows finds its
    /// request without a sleep and a wake-up. When nothing came, the cost is one `sched_yield` and one `ppoll`
    /// per wake-up. In one run of `bench/tools/rps_alternate.sh` against the Go peer (three alternating rounds,
    /// `GET /health` and fib JSON): sleeping at once, 1.35x and 1.27x the peer's requests/s; with the second
    /// look, 1.64x and 1.68x; the Dispatch read source this replaced, 1.46x and 1.55x. Runs differ by more than
    /// rounds do on a shared machine; bench/README.md has the others.
    private func run() {
        var descriptors = [
            pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: -1, events: Int16(POLLIN), revents: 0),
        ]
        var running: [@Sendable () -> Void] = []
        var look = false
        var timeout = timespec()
        while true {
            // What to wait for, and how long.
            pthread_mutex_lock(mutex)
            if stopped {
                pthread_mutex_unlock(mutex)
                retire()
                return
            }
            descriptors[1].fd = poller?.fd ?? -1
            let serve = self.serve
            var wait: UInt64? = nil  // nil: until woken
            if look || !tasks.isEmpty {
                wait = 0
            } else if let deadline = timers.nextDeadline {
                let now = SystemEnvironment.preciseMonotonicNanoseconds()
                wait = deadline > now ? deadline &- now : 0
            }
            if wait != 0 { sleepsUntil = timers.nextDeadline ?? .max }
            let tasksWaiting = !tasks.isEmpty
            pthread_mutex_unlock(mutex)
            // The yield before the look is for other threads' requests; with tasks of its own waiting (a stream's
            // next window, a flush) the loop goes on with them instead.
            if look && !tasksWaiting { sched_yield() }

            if let wait {
                timeout.tv_sec = Int(wait / 1_000_000_000)
                timeout.tv_nsec = Int(wait % 1_000_000_000)
            }
            let ready = withUnsafePointer(to: &timeout) { pointer in
                LinuxSymbols.ppoll(&descriptors, 2, wait == nil ? nil : pointer, nil)
            }
            if ready < 0 && errno != EINTR && errno != ENOMEM && errno != EAGAIN {
                // EFAULT, EINVAL: not with these arguments. Should it happen, the loop's work goes to Dispatch
                // rather than wait for a thread that is gone.
                retire()
                return
            }
            let woken = ready > 0 && descriptors[0].revents != 0
            let socketsReady = ready > 0 && descriptors[1].revents != 0
            if woken {
                var count: UInt64 = 0
                _ = Glibc.read(wakeFD, &count, MemoryLayout<UInt64>.size)
            }

            // What is due.
            pthread_mutex_lock(mutex)
            sleepsUntil = nil
            swap(&running, &tasks)
            if !timers.isEmpty {
                timers.takeDue(now: SystemEnvironment.preciseMonotonicNanoseconds(), into: &running)
            }
            pthread_mutex_unlock(mutex)

            if socketsReady || !running.isEmpty {
                queue.sync {
                    if socketsReady { serve?() }
                    for work in running { work() }
                }
                // Release what the tasks captured before waiting (a task may hold the last reference to its loop).
                running.removeAll(keepingCapacity: true)
            }
            look = socketsReady
        }
    }
}
