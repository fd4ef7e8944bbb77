import Dispatch
import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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
    ///   - createsSession: Whether a lane without a session yet creates one for `work` (`invalidate` does not:
    ///     creating one only to drop it would start libcurl, and at exit that races the process's teardown).
    func perform(
        _ call: NetworkingCall,
        url: URL? = nil,
        createsSession: Bool = true,
        _ work: @escaping @Sendable (URLSession?) -> Void
    ) {
        let requestedOnEventLoop = UpstreamSession.isOnEventLoop
        pending.add(1, ordering: .relaxed)
        queue.async { [self] in
            let session = createsSession ? currentSession(url: url) : self.session
            enter(call, url: url, requestedOnEventLoop: requestedOnEventLoop)
            work(session)
            pending.subtract(1, ordering: .relaxed)
        }
    }

    /// Invalidates the session: its tasks are cancelled and later transfers fail as cancelled.
    func invalidate() {
        perform(.invalidate, createsSession: false) { [self] session in
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
