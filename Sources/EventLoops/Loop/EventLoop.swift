import Dispatch
import Glibc

/// One serial `DispatchQueue` that owns a share of the process's connections (a server's, a Redis client's), and the
/// thread that runs it.
///
/// Every connection is pinned to one loop and all of its state is touched only on the loop's queue.
/// Socket readiness reaches the loop through its ``Poller`` (a level-triggered epoll set holding every
/// connection of the loop); the loop's own thread (``LoopThread``) sleeps in the kernel until a socket is
/// ready, another thread hands the loop work (``execute(_:)``) or a timer of the loop is due
/// (``schedule(afterNanoseconds:_:)``), and then does all of it inside the queue, on that thread: one wake-up
/// per batch, with no hand-off to a Dispatch worker. The loop also keeps the per-loop resources connections
/// borrow instead of owning: the read buffer and a spare outbound storage.
///
/// What a protocol builds on it (HTTP/1.1 in HTTPServer, the Redis client, TLS next), all on the loop:
///
/// - **Readiness:** ``register(_:_:interest:)`` a non-blocking descriptor (from ``Socket`` or ``ClientSocket``)
///   with a ``PollTarget``; the loop calls its ``PollTarget/pollReady(_:)`` when the descriptor is readable,
///   writable, half-closed or failed (``PollEvent``), as ``PollInterest`` asks; ``updateInterest(_:_:)`` to watch
///   for room only while a send came back short; ``deregister(_:)`` before ``Socket/close(_:)``.
/// - **Bytes:** read into ``readBuffer`` (one per loop, shared by every connection on it: consume or copy what a
///   read returned before the event handler returns) with ``Socket/read(_:into:)``; send from storage of your own
///   with ``Socket/send(_:_:)``, borrowing the loop's spare outbound storage (``takeSpareStorage()``,
///   ``reclaim(_:releasingPages:)``) rather than holding storage while idle.
/// - **Time and work:** ``schedule(afterNanoseconds:_:)`` arms a one-shot timer (no cancelling: the work checks
///   its own state when it runs); ``execute(_:)`` hands the loop work from any thread.
///
/// **Ownership:** Created and retained by an ``EventLoopGroup`` (or by whoever creates one alone); connections
/// keep a strong reference to their loop; the loop retains its registered targets.
///
/// **Thread safety:** ``execute(_:)``, ``schedule(afterNanoseconds:_:)``, ``queue`` and ``inEventLoop`` are safe
/// to call from any thread; everything else is confined to ``queue`` (``preconditionInEventLoop()``).
public final class EventLoop: @unchecked Sendable {  // Mutable state below is confined to `queue`.
    /// The serial queue all of this loop's work runs on. // Immutable.
    ///
    /// Hand the loop work with ``execute(_:)`` and ``schedule(afterNanoseconds:_:)``, which the loop's thread runs;
    /// a block sent to the queue directly (`queue.async`) still runs on the loop, but on a Dispatch worker and in
    /// no fixed order with those. The queue is for Dispatch sources and schedulers that need one.
    public let queue: DispatchQueue

    /// Bytes of the shared read buffer.
    public static let readBufferBytes = 64 * 1024
    /// Spare outbound storage larger than this is freed rather than kept.
    public static let maximumSpareBytes = 1024 * 1024

    private let key: DispatchSpecificKey<ObjectIdentifier>  // Immutable.
    /// The one read buffer (``readBufferBytes``) every connection on this loop reads into, inside its
    /// ``PollTarget/pollReady(_:)``: what a read put there is overwritten by the next connection's read, so parse or
    /// copy it before returning. Owned by the loop; never deallocate it. // Loop-confined.
    public let readBuffer: UnsafeMutableRawBufferPointer

    /// Outbound storage a drained connection handed back, for the next one that needs some. // Loop-confined.
    private(set) var spareStorage: UnsafeMutableRawBufferPointer?
    /// Whether the spare's whole pages have been given back to the kernel since it was handed back. // Loop-confined.
    private var spareIsReleased = false
    /// Whether the spare was lent or handed back since the last ``releaseIdleSpare()``. // Loop-confined.
    private var spareWasUsed = false

    /// Creates a loop on a new serial queue labelled `label`, and its thread (named `label`).
    ///
    /// Without a thread (the process is out of threads or descriptors), the loop still works: its tasks and
    /// timers go to Dispatch, and it cannot watch sockets (``register(_:_:interest:)`` throws).
    public init(label: String) {
        queue = DispatchQueue(label: label)
        key = DispatchSpecificKey()
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: EventLoop.readBufferBytes, alignment: 16)
        thread = try? LoopThread(queue: queue, name: label)
        queue.setSpecific(key: key, value: ObjectIdentifier(self))
    }

    /// The thread that runs the loop. // Immutable.
    private let thread: LoopThread?
    /// The epoll set of this loop's sockets, created on first registration. // Loop-confined.
    private var poller: Poller?
    /// Registered targets, indexed by descriptor. // Loop-confined.
    private var targets: [(any PollTarget)?] = []

    deinit {
        thread?.stop()
        readBuffer.deallocate()
        spareStorage?.deallocate()
    }

    /// Whether the caller is running on this loop's queue.
    public var inEventLoop: Bool {
        DispatchQueue.getSpecific(key: key) == ObjectIdentifier(self)
    }

    /// Runs `work` on this loop's queue, later (never inline, even when called on the loop), after the work
    /// handed over before it.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        if let thread { thread.enqueue(work) } else { queue.async(execute: work) }
    }

    /// Runs `work` on this loop's queue once `nanoseconds` have passed (on the monotonic clock). There is no
    /// cancelling it: work that may have become moot checks its own state when it runs.
    public func schedule(afterNanoseconds nanoseconds: UInt64, _ work: @escaping @Sendable () -> Void) {
        if let thread {
            let now = SystemEnvironment.preciseMonotonicNanoseconds()
            let (deadline, overflow) = now.addingReportingOverflow(nanoseconds)
            thread.schedule(at: overflow ? .max : deadline, work)
        } else {
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds)), execute: work)
        }
    }

    /// Traps unless called on this loop's queue.
    @inlinable @inline(__always)
    public func preconditionInEventLoop() {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    // MARK: Readiness (loop-confined)

    /// Starts delivering readiness of `fd` to `target` (on this loop), as `interest` asks; the loop retains
    /// `target` until ``deregister(_:)``. Call on the loop, with a non-blocking descriptor.
    /// - Throws: ``IOError`` if the epoll set cannot be created (a loop without a thread, or out of descriptors)
    ///   or the descriptor added.
    public func register(_ fd: Int32, _ target: any PollTarget, interest: PollInterest) throws(IOError) {
        preconditionInEventLoop()
        let poller = try activePoller()
        let index = Int(fd)
        if index >= targets.count {
            targets.append(contentsOf: repeatElement(nil, count: max(index + 1, targets.count * 2) - targets.count))
        }
        try poller.add(fd, interest)
        targets[index] = target
    }

    /// Changes what `fd` (registered) is watched for. Call on the loop.
    public func updateInterest(_ fd: Int32, _ interest: PollInterest) throws(IOError) {
        try poller?.modify(fd, interest)
    }

    /// Stops delivering readiness of `fd` and lets go of its target. Call on the loop, before closing `fd`.
    public func deregister(_ fd: Int32) {
        poller?.remove(fd)
        if Int(fd) < targets.count { targets[Int(fd)] = nil }
    }

    /// Creates the loop's epoll set now rather than at the first connection, so that a server holds every
    /// descriptor its loops need before it accepts: under a tight open-file limit, a loop that created its set
    /// late would fail to register the connection it was handed and could only reset it.
    public func preparePoller() throws(IOError) {
        preconditionInEventLoop()
        _ = try activePoller()
    }

    private func activePoller() throws(IOError) -> Poller {
        if let poller { return poller }
        guard let thread else { throw IOError(errno: EAGAIN, call: "pthread_create") }
        let created = try Poller()
        thread.attach(created) { [weak self] in self?.drainReadyEvents() }
        poller = created
        return created
    }

    /// Serves every ready descriptor, polling again while there is more (bounded, so work queued with
    /// ``execute(_:)`` is not starved).
    /// Polls per wake-up at most; under load each finds new work, so a wake-up is amortised over many
    /// requests, while work queued with ``execute(_:)`` still runs every few hundred microseconds (the loop's
    /// thread runs it after this call, in the same round).
    private static let drainRounds = 16

    private func drainReadyEvents() {
        guard let poller else { return }
        for _ in 0..<EventLoop.drainRounds {
            let ready = poller.poll { event in
                let index = Int(event.fd)
                if index < targets.count, let target = targets[index] { target.pollReady(event) }
            }
            if ready == 0 { break }
        }
    }

    // MARK: Spare outbound storage (loop-confined)

    /// Takes the loop's spare storage, if there is one: the caller owns it from now on, and hands it back with
    /// ``reclaim(_:releasingPages:)`` (or deallocates it). Its contents are undefined. Call on the loop.
    @inline(__always)
    public func takeSpareStorage() -> UnsafeMutableRawBufferPointer? {
        guard let spare = spareStorage else { return nil }
        spareStorage = nil
        spareWasUsed = true
        return spare
    }

    /// Takes back storage a connection no longer needs: kept as the spare if the slot is free and the
    /// storage is not too large, freed otherwise.
    /// - Parameter releasingPages: The storage comes from a stream whose reader stopped taking bytes, not
    ///   from a writer that cycles it batch after batch: its whole pages go back to the kernel first
    ///   (`MADV_DONTNEED`; the next user faults in fresh zero pages as it writes), so the batch a stall
    ///   leaves behind does not stay resident, whether kept as the spare or freed into the heap.
    /// Call on the loop; `storage` (allocated with `UnsafeMutableRawBufferPointer.allocate`) is the loop's after.
    @inline(__always)
    public func reclaim(_ storage: UnsafeMutableRawBufferPointer, releasingPages: Bool = false) {
        if releasingPages { EventLoop.releasePages(of: storage) }
        if spareStorage == nil && storage.count <= EventLoop.maximumSpareBytes {
            spareStorage = storage
            spareIsReleased = releasingPages
            spareWasUsed = true
        } else if let spare = spareStorage, spare.count < storage.count, storage.count <= EventLoop.maximumSpareBytes {
            spare.deallocate()
            spareStorage = storage
            spareIsReleased = releasingPages
            spareWasUsed = true
        } else {
            storage.deallocate()
        }
    }

    /// Gives the spare's whole pages back to the kernel if nobody lent or handed back storage since the
    /// previous call: no writer on this loop cycles it, so it need not stay resident (the next user
    /// faults in fresh pages). Called by the connections' coarse timer.
    /// - Returns: Whether nothing is left to release (no spare, or its pages are back with the kernel), so the
    ///   timer may stop until the loop is used again.
    @discardableResult
    public func releaseIdleSpare() -> Bool {
        preconditionInEventLoop()
        if spareWasUsed {
            spareWasUsed = false
            return false
        }
        guard let spare = spareStorage, !spareIsReleased else { return true }
        EventLoop.releasePages(of: spare)
        spareIsReleased = true
        return true
    }

    /// The size of a memory page.
    static let pageBytes = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))

    /// The whole pages inside `storage` (its partial first and last pages left out), or `nil` if none.
    static func wholePages(of storage: UnsafeMutableRawBufferPointer) -> UnsafeMutableRawBufferPointer? {
        guard let base = storage.baseAddress else { return nil }
        let mask = pageBytes &- 1
        let start = (Int(bitPattern: base) &+ mask) & ~mask
        let end = (Int(bitPattern: base) &+ storage.count) & ~mask
        guard end > start, let first = UnsafeMutableRawPointer(bitPattern: start) else { return nil }
        return UnsafeMutableRawBufferPointer(start: first, count: end &- start)
    }

    /// Gives the whole pages inside `storage` back to the kernel; their contents read as zeros after.
    private static func releasePages(of storage: UnsafeMutableRawBufferPointer) {
        guard let pages = wholePages(of: storage) else { return }
        _ = madvise(pages.baseAddress, pages.count, Int32(MADV_DONTNEED))
    }
}
