import Dispatch
import Foundation
import Reactive

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One `GET` through an ``UpstreamSession``, as a publisher of its response and body, with the body
/// read up to a byte limit.
///
/// Nothing is sent until the subscriber asks for a value. The task is created, resumed and cancelled
/// on the networking queue of one of the session's lanes, never by the caller, so subscribing,
/// requesting and cancelling return at once on any thread, an event loop included. The body is counted
/// as it arrives (the session's delegate hands over each piece): a `Content-Length` over `maxBodyBytes`
/// fails the transfer when the head arrives, and a body that grows past it fails it at that byte; either
/// way the task is cancelled and what was read is dropped. Cancelling stops delivery at once and
/// cancels the task.
///
///     BodyTransfer(url: url, headers: [:], timeoutInterval: 6, maxBodyBytes: 4 << 20, session: session)
///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0.data.count, "bytes") })
///
/// **Thread safety:** a value; each subscription is safe to request and cancel from any thread.
struct BodyTransfer: Publisher, Sendable {
    typealias Output = (data: Data, response: HTTPURLResponse)
    typealias Failure = BodyTransferError

    /// Bodies at least this large are followed by a return of freed memory to the system (after a body
    /// over the limit here, after a delivered one in ``UpstreamClient/get(_:query:headers:)``).
    static let largeBodyBytes = 1 << 20

    let url: URL
    /// Header fields set on the request, beyond the session's `Accept` and `User-Agent`.
    let headers: [String: String]
    /// The request's `timeoutInterval` (a backstop behind the client's own timers).
    let timeoutInterval: TimeInterval
    let maxBodyBytes: Int
    let session: UpstreamSession

    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == BodyTransferError {
        subscriber.receive(subscription: BodyTransferSubscription(transfer: self, subscriber: subscriber))
    }
}

/// One subscription to a ``BodyTransfer``: the state machine, the subscriber, and the calls to
/// FoundationNetworking through the session's queue.
///
/// **Ownership:** retained by its subscriber until it cancels or the transfer ends, and by its lane's
/// router while its task runs.
///
/// **Thread safety:** safe to call from any thread; `machine` and `subscriber` are guarded by `lock`,
/// which is never held while calling the subscriber or FoundationNetworking.
private final class BodyTransferSubscription<S: Subscriber>: Subscription, TransferSink, CustomStringConvertible,
    @unchecked Sendable
where S.Input == BodyTransfer.Output, S.Failure == BodyTransferError {
    // @unchecked Sendable: `machine` and `subscriber` are guarded by `lock`; `transfer` is immutable.
    private let transfer: BodyTransfer  // Immutable.
    private let lock = Lock()
    /// Where this transfer's task is created, resumed and cancelled, chosen when it starts. // Guarded by lock.
    private var lane: NetworkingLane?
    /// Whether the body crossed the limit (its task runs on until the cancel lands). // Guarded by lock.
    private var crossedLimit = false
    private var machine: BodyTransferStateMachine  // Guarded by lock.
    private var subscriber: S?  // Guarded by lock.

    init(transfer: BodyTransfer, subscriber: S) {
        self.transfer = transfer
        self.machine = BodyTransferStateMachine(limit: transfer.maxBodyBytes)
        self.subscriber = subscriber
    }

    var description: String { "BodyTransfer" }

    func request(_ demand: Subscribers.Demand) {
        guard demand > .none else { return }
        let lane = lock.withLock { () -> NetworkingLane? in
            guard machine.demanded() else { return nil }
            let lane = transfer.session.lane()
            self.lane = lane
            return lane
        }
        // Captured as an existential, so the @Sendable closure holds no generic metatype.
        let sink: any TransferSink = self
        guard let lane else { return }
        lane.perform(.start, url: transfer.url) { session in sink.start(in: session, lane: lane) }
    }

    func cancel() {
        let running = lock.withLock { () -> (URLSessionDataTask, NetworkingLane?)? in
            subscriber = nil
            return machine.cancelled().map { ($0, lane) }
        }
        if let (task, lane) = running, let lane { cancelTask(task, on: lane) }
    }

    /// Cancels `task` on the networking queue of `lane`, where it started. Its callbacks still come here
    /// (and are dropped) until it reports its end, which may be seconds later: see ``UpstreamSession``.
    private func cancelTask(_ task: URLSessionDataTask, on lane: NetworkingLane) {
        let box = TaskBox(task)
        lane.perform(.cancel, url: transfer.url) { urlSession in
            if let urlSession { box.task.cancelUnlessCached(in: urlSession) }
        }
    }

    /// On the networking queue of `lane`: creates and resumes the task, unless cancelled meanwhile.
    func start(in session: URLSession?, lane: NetworkingLane) {
        guard let session else {
            if let subscriber = lock.withLock({ machine.couldNotStart() ? takeSubscriber() : nil }) {
                subscriber.receive(completion: .failure(.transport(URLError(.cancelled))))
            }
            return
        }
        guard lock.withLock({ machine.shouldCreateTask() }) else { return }
        var request = URLRequest(url: transfer.url)
        request.httpMethod = "GET"
        request.timeoutInterval = transfer.timeoutInterval
        for (name, value) in transfer.headers {
            request.setValue(value, forHTTPHeaderField: name)
        }
        let task = session.dataTask(with: request)
        lane.router.register(task.taskIdentifier, self)
        let action = lock.withLock { machine.taskCreated(task) }
        task.resume()
        if case .resumeThenCancel = action {
            task.cancelUnlessCached(in: session)
        }
    }

    // MARK: TransferSink (the session's delegate queue)

    func responded(_ response: URLResponse) {
        handle(lock.withLock { machine.responded(response) })
    }

    func received(_ data: Data) {
        handle(lock.withLock { machine.received(data) })
    }

    func completed(_ error: (any Error)?) {
        let (action, subscriber, overran) = lock.withLock {
            () -> (BodyTransferStateMachine.CompletionAction, S?, Bool) in
            let action = machine.completed(error)
            if case .none = action { return (action, nil, crossedLimit) }
            return (action, takeSubscriber(), false)
        }
        if overran {
            // The task of a body over the limit has ended at last: whatever it read meanwhile (dropped as it
            // came, but by way of buffers queued for the delegate) is free now.
            MemoryReturn.shared.largeBufferReleased()
        }
        guard let subscriber else { return }
        switch action {
        case .none:
            break
        case .deliver(let data, let response, let isPresized):
            // A body that grew by appends may hold up to as much again in spare capacity: keep an exact copy.
            let body = !isPresized && data.count > 64 * 1024 ? Data(data) : data
            _ = subscriber.receive((body, response))
            subscriber.receive(completion: .finished)
        case .fail(let error):
            subscriber.receive(completion: .failure(error))
        }
    }

    /// Fails the subscriber and cancels the task when a limit was crossed.
    private func handle(_ action: BodyTransferStateMachine.ReceiveAction) {
        guard case .fail(let error, let task) = action else { return }
        let (subscriber, taskLane) = lock.withLock { () -> (S?, NetworkingLane?) in
            if case .tooLarge = error { crossedLimit = true }
            return (takeSubscriber(), lane)
        }
        if let taskLane { cancelTask(task, on: taskLane) }
        subscriber?.receive(completion: .failure(error))
    }

    /// The subscriber, once: later calls get `nil`. Call with the lock held.
    private func takeSubscriber() -> S? {
        defer { subscriber = nil }
        return subscriber
    }
}

/// Carries a task to the networking queue.
///
/// **Thread safety:** audited: the task is only used on the networking queue once boxed; URLSessionTask
/// is thread-safe in FoundationNetworking.
private struct TaskBox: @unchecked Sendable {
    let task: URLSessionDataTask

    init(_ task: URLSessionDataTask) {
        self.task = task
    }
}
