import Dispatch
import Foundation
import Reactive

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One `GET` through an ``UpstreamSession``, as a publisher of its response and body, with the body
/// read up to a byte limit.
///
/// Nothing is sent until the subscriber asks for a value. The transfer runs on the session's
/// ``CurlDriver`` thread; subscribing, requesting and cancelling only hand it a command, so they return at
/// once on any thread, an event loop included. The body is counted as it arrives: a `Content-Length` over
/// `maxBodyBytes` fails the transfer when the head arrives, and a body that grows past it fails it at that
/// byte; either way libcurl is refused the next byte, the connection is closed and what was read is
/// dropped. Cancelling stops delivery at once; the connection is closed at the driver's next turn.
///
///     BodyTransfer(url: url, headers: [:], timeoutInterval: 6, maxBodyBytes: 4 << 20, session: session)
///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0.data.count, "bytes") })
///
/// **Thread safety:** a value; each subscription is safe to request and cancel from any thread. The
/// subscriber is called on a Dispatch worker, never on the driver's thread (which only moves bytes).
struct BodyTransfer: Publisher, Sendable {
    typealias Output = (data: Data, response: HTTPURLResponse)
    typealias Failure = BodyTransferError

    /// Bodies at least this large are followed by a return of freed memory to the system (after a body
    /// over the limit here, after a delivered one in ``UpstreamClient/get(_:query:headers:)``).
    static let largeBodyBytes = 1 << 20

    let url: URL
    /// Header fields set on the request, beyond the session's own (`Accept`, `User-Agent`, ...).
    let headers: [String: String]
    /// libcurl's time limit for the whole transfer (a backstop behind the client's own timers).
    let timeoutInterval: TimeInterval
    let maxBodyBytes: Int
    let session: UpstreamSession

    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == BodyTransferError {
        subscriber.receive(subscription: BodyTransferSubscription(transfer: self, subscriber: subscriber))
    }
}

/// One subscription to a ``BodyTransfer``: the state machine, the subscriber, and its ``CurlTask``.
///
/// **Ownership:** retained by its subscriber until it cancels or the transfer ends, and by its task while
/// the task runs.
///
/// **Thread safety:** safe to call from any thread; `machine` and `subscriber` are guarded by `lock`,
/// which is never held while calling the subscriber or the driver.
private final class BodyTransferSubscription<S: Subscriber>: Subscription, CurlTaskOwner, CustomStringConvertible,
    @unchecked Sendable
where S.Input == BodyTransfer.Output, S.Failure == BodyTransferError {
    // @unchecked Sendable: `machine`, `crossedLimit` and `subscriber` are guarded by `lock`; `transfer` is
    // immutable.
    private let transfer: BodyTransfer  // Immutable.
    private let lock = Lock()
    /// Whether the body crossed the limit. // Guarded by lock.
    private var crossedLimit = false
    private var machine: BodyTransferStateMachine<CurlTask>  // Guarded by lock.
    private var subscriber: S?  // Guarded by lock.

    init(transfer: BodyTransfer, subscriber: S) {
        self.transfer = transfer
        self.machine = BodyTransferStateMachine(limit: transfer.maxBodyBytes)
        self.subscriber = subscriber
    }

    var description: String { "BodyTransfer" }

    func request(_ demand: Subscribers.Demand) {
        guard demand > .none, lock.withLock({ machine.demanded() }) else { return }
        let session = transfer.session
        let task = CurlTask(
            url: transfer.url,
            headers: session.headers(adding: transfer.headers),
            timeoutMilliseconds: UpstreamClient.nanoseconds(transfer.timeoutInterval) / 1_000_000,
            owner: self
        )
        guard case .start = lock.withLock({ machine.taskCreated(task) }) else { return }
        guard let driver = session.driver else {
            fail(URLError(.unsupportedURL, userInfo: [NSLocalizedDescriptionKey: UpstreamSession.unavailable]))
            return
        }
        if !driver.start(task) {
            // The session was invalidated (the service is shutting down).
            fail(URLError(.cancelled))
        }
    }

    func cancel() {
        let task = lock.withLock { () -> CurlTask? in
            subscriber = nil
            return machine.cancelled()
        }
        if let task { transfer.session.driver?.cancel(task) }
    }

    private func fail(_ error: URLError) {
        let (action, subscriber) = lock.withLock { (machine.completed(error), takeSubscriber()) }
        guard case .fail(let failure) = action, let subscriber else { return }
        Self.deliver { subscriber.receive(completion: .failure(failure)) }
    }

    // MARK: CurlTaskOwner (the driver's thread)

    func responded(_ response: HTTPURLResponse) -> Bool {
        handle(lock.withLock { machine.responded(response) })
    }

    func received(_ bytes: UnsafeRawBufferPointer) -> Bool {
        handle(lock.withLock { machine.received(bytes) })
    }

    func completed(_ error: URLError?) {
        let (action, subscriber, overran) = lock.withLock {
            () -> (BodyTransferStateMachine<CurlTask>.CompletionAction, S?, Bool) in
            let action = machine.completed(error)
            if case .none = action { return (action, nil, crossedLimit) }
            return (action, takeSubscriber(), false)
        }
        if overran {
            // The task of a body over the limit has ended: the buffers it grew are free now.
            MemoryReturn.shared.largeBufferReleased()
        }
        guard let subscriber else { return }
        switch action {
        case .none:
            break
        case .deliver(let data, let response, let isPresized):
            // A body that grew by appends may hold up to as much again in spare capacity: keep an exact copy.
            let body = !isPresized && data.count > 64 * 1024 ? Data(data) : data
            Self.deliver {
                _ = subscriber.receive((body, response))
                subscriber.receive(completion: .finished)
            }
        case .fail(let error):
            Self.deliver { subscriber.receive(completion: .failure(error)) }
        }
    }

    /// Fails the subscriber when a limit was crossed; returns whether the transfer goes on. The driver ends
    /// a transfer whose callback says no, so there is no cancel to send.
    private func handle(_ action: BodyTransferStateMachine<CurlTask>.ReceiveAction) -> Bool {
        guard case .fail(let error, _) = action else { return true }
        let subscriber = lock.withLock { () -> S? in
            if case .tooLarge = error { crossedLimit = true }
            return takeSubscriber()
        }
        if let subscriber { Self.deliver { subscriber.receive(completion: .failure(error)) } }
        return false
    }

    /// The subscriber, once: later calls get `nil`. Call with the lock held.
    private func takeSubscriber() -> S? {
        defer { subscriber = nil }
        return subscriber
    }

    /// Runs a call to the subscriber on a Dispatch worker: the driver's thread only moves bytes (a 4 MiB
    /// body decoded there would hold up every other transfer).
    ///
    /// The closure captures the non-Sendable subscriber; that is sound because the subscription hands over the
    /// subscriber's last call once, after taking it out of its state under the lock, so no other thread calls
    /// that subscriber afterwards.
    private static func deliver(_ work: @escaping () -> Void) {
        let box = UncheckedSendableBox(work)
        DispatchQueue.global().async { box.value() }
    }
}
