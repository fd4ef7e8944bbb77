import Foundation
import Reactive

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLSession {
    /// A publisher that runs one data task for `request` when it is first asked for a value.
    ///
    /// The same shape as Combine's: the output is `(data, response)`, the failure a `URLError`.
    /// Nothing is sent on the network until the subscriber requests a value. The task is created,
    /// resumed and cancelled on a serial queue of its own (``DataTaskPublisher/taskQueue``), never by the
    /// caller: on Linux those calls wait on the session's libcurl queue, which an event loop must never
    /// do. Cancelling the subscription stops delivery at once and cancels the `URLSessionTask` — on Linux only if the
    /// session has no `URLCache` (`configuration.urlCache = nil`): there, a cancel racing the start of a
    /// task can trap the process inside FoundationNetworking, so a task of a session with a cache is left
    /// to finish and its result dropped. See ``URLSessionTask/cancelUnlessCached(in:)``.
    ///
    ///     let cancellable = URLSession.shared.dataTaskPublisher(for: url)
    ///         .map(\.data)
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0.count, "bytes") })
    public func dataTaskPublisher(for request: URLRequest) -> DataTaskPublisher {
        DataTaskPublisher(request: request, session: self)
    }

    /// A publisher that runs one data task for `url` when it is first asked for a value.
    public func dataTaskPublisher(for url: URL) -> DataTaskPublisher {
        DataTaskPublisher(request: URLRequest(url: url), session: self)
    }

    /// Runs one `URLSessionDataTask` per subscription, lazily; see ``URLSession/dataTaskPublisher(for:)-(URLRequest)``.
    ///
    /// **Thread safety:** a value; each subscription is safe to request and cancel from any thread.
    public struct DataTaskPublisher: Publisher, @unchecked Sendable {
        // @unchecked: URLRequest and URLSession are both safe to share; URLSession is an open
        // class that swift-corelibs-foundation documents as thread-safe.
        public typealias Output = (data: Data, response: URLResponse)
        public typealias Failure = URLError

        /// The request each subscription sends.
        public let request: URLRequest
        /// The session that runs the tasks.
        public let session: URLSession

        public init(request: URLRequest, session: URLSession) {
            self.request = request
            self.session = session
        }

        /// Where every subscription creates, resumes and cancels its task: one serial queue for all
        /// sessions, away from the callers' threads. (Spout's own ``UpstreamClient`` does not use this
        /// publisher; its ``UpstreamSession`` has a queue per session.)
        static let taskQueue = DispatchQueue(label: "spout.data-task-publisher")

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == URLError {
            subscriber.receive(
                subscription: DataTaskSubscription(request: request, session: session, subscriber: subscriber)
            )
        }
    }
}

/// Where a data task's completion handler reports.
private protocol DataTaskCompletion: AnyObject, Sendable {
    /// On the task queue: create and resume the task.
    func start()
    func finish(data: Data?, response: URLResponse?, error: (any Error)?)
}

/// One data task: created and resumed on the task queue after the first positive demand, cancelled
/// there with the subscription.
///
/// States: waiting (subscriber, no task) → starting (the task is being created on the task queue) →
/// running (subscriber, task) → done. Whoever moves the state to done owns the subscriber's last call,
/// so the completion handler and `cancel()` can race without a double or late delivery: once `cancel()`
/// has taken the state to done, nothing the task reports afterwards reaches the subscriber. (A delivery
/// that the completion handler had already begun on the session's delegate queue when `cancel()` was
/// called on another thread may still be running as `cancel()` returns, as in Combine.) The lock is
/// never held while calling the subscriber or the task; the task is only touched on the task queue.
///
/// The task itself is cancelled with ``URLSessionTask/cancelUnlessCached(in:)``: always when the
/// session has no `URLCache` (so a hanging or slow upstream is cut off), never when it has one (a
/// cancel racing the task's start can then trap the process on Linux).
///
/// **Ownership:** retained by the subscriber until it cancels; the task's completion handler holds
/// it until the task ends, and a queued start or cancel until it has run.
///
/// **Thread safety:** safe to call `request(_:)` and `cancel()` from any thread (guarded by `lock`).
private final class DataTaskSubscription<S: Subscriber>: Subscription, DataTaskCompletion, @unchecked Sendable
where S.Input == URLSession.DataTaskPublisher.Output, S.Failure == URLError {
    // @unchecked: `state` is guarded by `lock`; `request` and `session` are immutable, and the task is
    // only called on the task queue.
    private enum State {
        case waiting(S)
        case starting(S)
        case running(S, URLSessionDataTask)
        case done
    }

    private let lock = NSLock()
    private var state: State  // Guarded by lock.
    private let request: URLRequest  // Immutable.
    private let session: URLSession  // Immutable.

    init(request: URLRequest, session: URLSession, subscriber: S) {
        self.request = request
        self.session = session
        self.state = .waiting(subscriber)
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > .none else { return }
        let starts: Bool = lock.withLock {
            guard case .waiting(let subscriber) = state else { return false }
            state = .starting(subscriber)
            return true
        }
        guard starts else { return }
        // Captured as an existential, so the @Sendable closure holds no generic metatype.
        let subscription: any DataTaskCompletion = self
        URLSession.DataTaskPublisher.taskQueue.async { subscription.start() }
    }

    /// On the task queue: creates and resumes the task unless cancelled meanwhile.
    func start() {
        guard lock.withLock({ if case .starting = state { true } else { false } }) else { return }
        // Captured as an existential, so the @Sendable handler holds no generic metatype.
        let completion: any DataTaskCompletion = self
        let task = session.dataTask(with: request) { data, response, error in
            completion.finish(data: data, response: response, error: error)
        }
        let cancelled: Bool = lock.withLock {
            guard case .starting(let subscriber) = state else { return true }
            state = .running(subscriber, task)
            return false
        }
        // A task cancelled while it was being created is resumed, then cancelled: a resumed task
        // reliably ends (its handler releases this subscription); one never resumed may not.
        task.resume()
        if cancelled { task.cancelUnlessCached(in: session) }
    }

    func cancel() {
        let task: URLSessionDataTask? = lock.withLock {
            defer { state = .done }
            if case .running(_, let task) = state { return task }
            return nil
        }
        guard let task else { return }
        let box = DataTaskBox(task: task, session: session)
        URLSession.DataTaskPublisher.taskQueue.async { box.task.cancelUnlessCached(in: box.session) }
    }

    fileprivate func finish(data: Data?, response: URLResponse?, error: (any Error)?) {
        let subscriber: S? = lock.withLock {
            guard case .running(let subscriber, _) = state else { return nil }
            state = .done
            return subscriber
        }
        guard let subscriber else { return }
        if let error {
            subscriber.receive(completion: .failure(error as? URLError ?? URLError(.unknown)))
        } else if let response {
            _ = subscriber.receive((data ?? Data(), response))
            subscriber.receive(completion: .finished)
        } else {
            subscriber.receive(completion: .failure(URLError(.badServerResponse)))
        }
    }
}

/// Carries a task and its session to the task queue.
///
/// **Thread safety:** audited: both are used only on the task queue once boxed, and FoundationNetworking
/// documents sessions and tasks as thread-safe.
private struct DataTaskBox: @unchecked Sendable {
    let task: URLSessionDataTask
    let session: URLSession
}
