import Dispatch
import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The calls into FoundationNetworking that an ``UpstreamSession`` makes, each on a lane's queue.
package enum NetworkingCall: String, Sendable, CaseIterable {
    /// `URLSession(configuration:delegate:delegateQueue:)`, at the first transfer.
    case createSession
    /// `URLSession.dataTask(with:)` then `URLSessionTask.resume()` for one transfer.
    case start
    /// `URLSessionTask.cancel()`.
    case cancel
    /// `URLSession.invalidateAndCancel()`.
    case invalidate
}

/// The `URLSession`s of an ``UpstreamClient`` and the serial queues that are the only places Spout
/// calls into FoundationNetworking.
///
/// **Why queues of their own.** On Linux, FoundationNetworking implements `URLSession.dataTask(with:)`,
/// `URLSessionTask.resume()` and `cancel()` with a `DispatchQueue.sync` onto the session's work queue,
/// the queue that also drives libcurl. While that queue is busy — an upstream pouring in a body — the
/// caller waits, and a caller on an event loop stalls every connection of its loop: `/health` stopped
/// answering and the deadline's cancel never returned. So no caller makes those calls: each is queued on
/// a ``NetworkingLane``'s serial queue and the caller returns at once.
///
/// **Why several.** A session whose work queue is held by libcurl keeps a `cancel()` waiting for as long
/// as the upstream keeps the socket full: measured, 0.05 to 7 s against a loopback upstream sending
/// without end (and the session's own timeouts, timers on that same queue, do not fire meanwhile). Every
/// later call to that session would wait behind it. So there are ``laneCount`` lanes, each with its own
/// session (created at its first transfer) and queue, and a transfer starts on the lane with the fewest
/// calls waiting: one runaway upstream body holds up one lane, not the client.
///
/// **The check.** Each call asserts that it runs on its lane's queue and not on one of the event-loop
/// queues the client was given (`dispatchPrecondition`, kept in release builds), and is reported to the
/// test observers (see `UpstreamSession+Testing.swift`) with where it ran and where it was asked for.
///
/// **Ownership:** one per ``UpstreamClient``; a running transfer retains its lane.
///
/// **Thread safety:** safe to call from any thread; the lanes are.
final class UpstreamSession: Sendable {
    /// How many sessions (and queues) the calls are spread over.
    static let laneCount = 4

    /// The lanes, each with a session, a queue and a router. // Immutable.
    let lanes: [NetworkingLane]
    private let nextLane = Atomic<Int>(0)

    /// Marks the event-loop queues given to any session, to tell whether a caller is on one.
    static let eventLoopKey = DispatchSpecificKey<Bool>()

    /// - Parameters:
    ///   - requestTimeout: The sessions' `timeoutIntervalForRequest` (a backstop; Spout's own timers
    ///     end attempts first).
    ///   - resourceTimeout: The sessions' `timeoutIntervalForResource` (also a backstop).
    ///   - eventLoopQueues: The queues of the service's event loops: no call may run on them. They are
    ///     marked with a queue-specific key of this type's own, to report where a call was asked for.
    ///   - additionalHeaders: Headers every request of the sessions carries, besides `Accept` and `User-Agent`.
    init(
        requestTimeout: TimeInterval,
        resourceTimeout: TimeInterval,
        eventLoopQueues: [DispatchQueue] = [],
        additionalHeaders: [String: String] = [:]
    ) {
        for loop in eventLoopQueues { loop.setSpecific(key: Self.eventLoopKey, value: true) }
        lanes = (0..<Self.laneCount).map { index in
            NetworkingLane(
                index: index,
                requestTimeout: requestTimeout,
                resourceTimeout: resourceTimeout,
                eventLoopQueues: eventLoopQueues,
                additionalHeaders: additionalHeaders
            )
        }
    }

    /// Whether the calling thread runs one of the event-loop queues given to any session.
    static var isOnEventLoop: Bool { DispatchQueue.getSpecific(key: eventLoopKey) == true }

    /// The lane for a new transfer: the one with the fewest calls waiting, the next in turn among equals.
    func lane() -> NetworkingLane {
        let start = nextLane.wrappingAdd(1, ordering: .relaxed).oldValue
        var best = lanes[start % lanes.count]
        for offset in 1..<lanes.count {
            let candidate = lanes[(start &+ offset) % lanes.count]
            if candidate.pendingCalls < best.pendingCalls { best = candidate }
        }
        return best
    }

    /// The transfers whose tasks run, on every lane (for tests).
    var runningTransfers: Int { lanes.reduce(0) { $0 + $1.router.count } }

    /// Invalidates every lane's session: their tasks are cancelled and later transfers fail as cancelled.
    func invalidate() {
        for lane in lanes { lane.invalidate() }
    }
}

/// One `URLSession` and the serial queue its FoundationNetworking calls run on; see ``UpstreamSession``.
///
/// The session is created on the queue by the first transfer and invalidated there by ``invalidate()``
/// or when the lane is released; a transfer started after that fails as cancelled. Its delegate, a
/// ``TransferRouter``, hands each task's response, body bytes and completion to the ``BodyTransfer``
/// subscription that started it, so bodies are counted as they arrive instead of collected whole.
///
/// **Ownership:** owned by its ``UpstreamSession``; a running transfer retains it.
///
/// **Thread safety:** safe to call from any thread. `session` and `isInvalidated` are confined to
/// ``queue``; everything else is immutable or atomic.
final class NetworkingLane: @unchecked Sendable {
    /// The lane's position in its session, for the observers. // Immutable.
    let index: Int
    /// The serial queue every FoundationNetworking call of this lane runs on. // Immutable.
    let queue: DispatchQueue
    /// Routes the session's delegate callbacks to transfers. // Immutable.
    let router = TransferRouter()
    /// The event-loop queues no call may run on. // Immutable.
    private let eventLoopQueues: [DispatchQueue]
    private let requestTimeout: TimeInterval  // Immutable.
    private let resourceTimeout: TimeInterval  // Immutable.
    private let pending = Atomic<Int>(0)
    private var session: URLSession?  // Confined to queue.
    private let additionalHeaders: [String: String]  // Immutable.
    private var isInvalidated = false  // Confined to queue.

    /// Marks every lane's queue, to tell the calls that run on one.
    private static let queueKey = DispatchSpecificKey<Int>()

    init(
        index: Int,
        requestTimeout: TimeInterval,
        resourceTimeout: TimeInterval,
        eventLoopQueues: [DispatchQueue],
        additionalHeaders: [String: String]
    ) {
        self.index = index
        self.additionalHeaders = additionalHeaders
        queue = DispatchQueue(label: "spout.upstream.networking.\(index)")
        self.eventLoopQueues = eventLoopQueues
        self.requestTimeout = requestTimeout
        self.resourceTimeout = resourceTimeout
        queue.setSpecific(key: Self.queueKey, value: index)
    }

    deinit {
        // Nothing else holds this lane, so nothing runs on its queue for it: `session` may be read here.
        guard let session else { return }
        let router = router
        queue.async {
            session.invalidateAndCancel()
            withExtendedLifetime(router) {}
        }
    }

    /// Calls queued on this lane and not yet finished.
    var pendingCalls: Int { pending.load(ordering: .relaxed) }

    /// Runs `work` on ``queue`` with the session (created if needed), or with `nil` once it has been
    /// invalidated. Returns at once.
    ///
    /// - Parameters:
    ///   - call: What `work` calls in FoundationNetworking, for the check and the observers.
    ///   - url: The request concerned, if any, for the observers.
    func perform(_ call: NetworkingCall, url: URL? = nil, _ work: @escaping @Sendable (URLSession?) -> Void) {
        let requestedOnEventLoop = UpstreamSession.isOnEventLoop
        pending.add(1, ordering: .relaxed)
        queue.async { [self] in
            let session = currentSession(url: url)
            enter(call, url: url, requestedOnEventLoop: requestedOnEventLoop)
            work(session)
            pending.subtract(1, ordering: .relaxed)
        }
    }

    /// Invalidates the session: its tasks are cancelled and later transfers fail as cancelled.
    func invalidate() {
        perform(.invalidate) { [self] session in
            session?.invalidateAndCancel()
            self.session = nil
            isInvalidated = true
        }
    }

    /// The session, created at the first call; `nil` once invalidated. On ``queue``.
    private func currentSession(url: URL?) -> URLSession? {
        if let session { return session }
        guard !isInvalidated else { return nil }
        enter(.createSession, url: url, requestedOnEventLoop: false)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = requestTimeout
        configuration.timeoutIntervalForResource = resourceTimeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // No URLCache (the ResponseCache caches): on Linux, cancelling a task of a session with one can
        // trap inside FoundationNetworking (URLSessionTask.cancelUnlessCached(in:)).
        configuration.urlCache = nil
        configuration.httpAdditionalHeaders = additionalHeaders.merging(
            ["Accept": "application/json", "User-Agent": "spout"]
        ) { _, fixed in fixed }
        // Delegate callbacks arrive on a serial operation queue of the session's own.
        let created = URLSession(configuration: configuration, delegate: router, delegateQueue: nil)
        session = created
        return created
    }

    /// The check every call passes: on ``queue``, on no event loop; then the observers hear of it.
    private func enter(_ call: NetworkingCall, url: URL?, requestedOnEventLoop: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        for loop in eventLoopQueues {
            dispatchPrecondition(condition: .notOnQueue(loop))
        }
        UpstreamSession.report(
            NetworkingCallRecord(
                call: call,
                url: url,
                lane: index,
                ranOnNetworkingQueue: DispatchQueue.getSpecific(key: Self.queueKey) == index,
                ranOnEventLoop: UpstreamSession.isOnEventLoop,
                requestedOnEventLoop: requestedOnEventLoop
            )
        )
    }
}

/// Where a task's delegate callbacks go: the transfer that started it.
protocol TransferSink: AnyObject, Sendable {
    /// On the networking queue of `lane`: create and resume the task in `session` (`nil` once invalidated).
    func start(in session: URLSession?, lane: NetworkingLane)
    /// The response head arrived.
    func responded(_ response: URLResponse)
    /// Body bytes arrived.
    func received(_ data: Data)
    /// The task ended, with `error` if it failed or was cancelled.
    func completed(_ error: (any Error)?)
}

/// The delegate of an ``UpstreamSession``'s `URLSession`: hands each task's callbacks to the transfer
/// registered for its task identifier, and drops those of tasks no longer registered.
///
/// **Ownership:** retained by its ``NetworkingLane`` and by the `URLSession` until invalidated; it
/// retains each registered transfer until its task reports its end — after a cancel too, which lets
/// the transfer see when a runaway body has really stopped.
///
/// **Thread safety:** safe to call from any thread (`sinks` is behind a `Mutex`); the callbacks come
/// on the session's delegate queue.
final class TransferRouter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked Sendable: the only state is `sinks`, a LockedState (a Mutex).
    private let sinks = LockedState<[Int: any TransferSink]>([:])

    /// Sends the callbacks of task `id` to `sink`.
    func register(_ id: Int, _ sink: any TransferSink) {
        sinks.withLock { $0[id] = sink }
    }

    /// The number of transfers registered (for tests).
    var count: Int { sinks.withLock { $0.count } }

    private func sink(_ task: URLSessionTask) -> (any TransferSink)? {
        let id = task.taskIdentifier
        return sinks.withLock { $0[id] }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        sink(dataTask)?.responded(response)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        sink(dataTask)?.received(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let id = task.taskIdentifier
        let sink = sinks.withLock { $0.removeValue(forKey: id) }
        sink?.completed(error)
    }
}
