import Foundation
import Reactive

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLSession {
    /// Returns a publisher that wraps a URL session data task for a given URL request.
    ///
    /// As in Combine: the output is `(data, response)`, the failure a `URLError`. Nothing goes out
    /// on the network until the subscriber requests a value; cancelling the subscription stops
    /// delivery at once and cancels the task (see ``URLSession/DataTaskPublisher`` for the one
    /// exception on Linux). The task is created, resumed and cancelled on a queue of the publisher's
    /// own, never on the caller's thread, so an event loop may subscribe, request and cancel.
    ///
    ///     let cancellable = URLSession.shared.dataTaskPublisher(for: URLRequest(url: url))
    ///         .map(\.data)
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0.count, "bytes") })
    ///     // Prints: 1270 bytes
    ///     //         finished
    ///
    /// - Parameter request: The URL request for which to create a data task.
    /// - Returns: A publisher that wraps a data task for the URL request.
    public func dataTaskPublisher(for request: URLRequest) -> DataTaskPublisher {
        DataTaskPublisher(request: request, session: self)
    }

    /// Returns a publisher that wraps a URL session data task for a given URL.
    ///
    /// - Parameter url: The URL for which to create a data task.
    /// - Returns: A publisher that wraps a data task for the URL.
    public func dataTaskPublisher(for url: URL) -> DataTaskPublisher {
        DataTaskPublisher(request: URLRequest(url: url), session: self)
    }

    /// A publisher that delivers the results of performing URL session data tasks.
    ///
    /// Each subscription runs one `URLSessionDataTask`, created and resumed after the first positive
    /// demand. Cancelling the subscription cancels the task — on Linux only when the session has no
    /// `URLCache` (`configuration.urlCache == nil`): swift-corelibs-foundation can trap inside
    /// FoundationNetworking when a task of a session with a cache is cancelled while it starts, so such a
    /// task is left to finish and its result dropped (``URLSessionTask/cancelUnlessCached(in:)`` has the
    /// evidence). Nothing reaches the subscriber after it cancelled.
    ///
    /// The task is created, resumed and cancelled on ``taskQueue``, one serial queue for every
    /// subscription, never on the thread that calls `request(_:)` or `cancel()`: on Linux those
    /// `URLSessionTask` calls wait on the session's libcurl queue, which an event loop must never do.
    ///
    /// **Ownership:** a value; each subscription is retained by its subscriber until it completes or
    /// cancels, and by its task's completion handler until the task ends.
    ///
    /// **Thread safety:** value type; its subscriptions are safe to call from any thread.
    public struct DataTaskPublisher: Publisher, @unchecked Sendable {
        // @unchecked Sendable: audited, no lock needed because both stored properties are immutable
        // and safe to share (URLRequest is a value; URLSession is documented as thread-safe).
        public typealias Output = (data: Data, response: URLResponse)
        public typealias Failure = URLError

        /// The URL request performed by the data task associated with this publisher.
        public let request: URLRequest

        /// The URL session that performs the data task associated with this publisher.
        public let session: URLSession

        /// Creates a data task publisher from the provided URL request and URL session.
        public init(request: URLRequest, session: URLSession) {
            self.request = request
            self.session = session
        }

        /// Where every subscription creates, resumes and cancels its task: one serial queue for all
        /// sessions, away from the callers' threads.
        static let taskQueue = DispatchQueue(label: "reactive-networking.data-task-publisher")

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            subscriber.receive(
                subscription: DataTaskSubscription(request: request, session: session, downstream: subscriber)
            )
        }
    }
}

/// The states of one data task subscription.
///
/// **Thread safety:** value type; guarded by its owner's lock.
internal struct DataTaskStateMachine<Downstream> {
    private enum State {
        /// No demand yet, no task. Next: `.starting`, `.done`.
        case waiting(Downstream)
        /// One caller is creating the task, outside the lock. Next: `.running`, `.done`.
        case starting(Downstream)
        /// The task is created (and resumed, or about to be). Next: `.done`.
        case running(Downstream, URLSessionDataTask)
        /// Delivered, failed or cancelled; everything released. Final.
        case done
    }

    private var state: State

    init(downstream: Downstream) {
        state = .waiting(downstream)
    }

    /// Positive demand arrived: `true` if the caller must create and start the task now.
    mutating func demandArrived() -> Bool {
        guard case .waiting(let downstream) = state else { return false }
        state = .starting(downstream)
        return true
    }

    /// The caller created `task`; returns `false` if the subscription ended meanwhile (the task is
    /// then to be resumed and cancelled: a task never resumed may never call its handler).
    mutating func taskCreated(_ task: URLSessionDataTask) -> Bool {
        guard case .starting(let downstream) = state else { return false }
        state = .running(downstream, task)
        return true
    }

    /// Whether the task is still to be created (no cancel since the demand arrived).
    func isStarting() -> Bool {
        if case .starting = state { return true }
        return false
    }

    /// The task ended: returns whom to deliver to, unless the subscription was cancelled.
    mutating func taskCompleted() -> Downstream? {
        guard case .running(let downstream, _) = state else { return nil }
        state = .done
        return downstream
    }

    /// The subscriber cancelled: returns the task to cancel, if one runs.
    mutating func cancelled() -> URLSessionDataTask? {
        defer { state = .done }
        if case .running(_, let task) = state { return task }
        return nil
    }
}

/// Where a data task's completion handler reports; an existential, so that the `@Sendable`
/// handler captures no generic type.
private protocol DataTaskCompletionHandling: AnyObject, Sendable {
    /// On the task queue: creates and resumes the task, unless the subscription was cancelled meanwhile.
    func startTask()
    func taskCompleted(data: Data?, response: URLResponse?, error: (any Error)?)
}

/// The subscription of ``URLSession/DataTaskPublisher``: one data task, started on first demand.
///
/// **Ownership:** retained by its subscriber until it completes or cancels, and by its task's
/// completion handler until the task ends.
///
/// **Thread safety:** safe to call from any thread; the lock is never held while calling the
/// subscriber or the task, and the task is only called on ``URLSession/DataTaskPublisher/taskQueue``.
private final class DataTaskSubscription<Downstream: Subscriber>: Subscription, DataTaskCompletionHandling,
    CustomStringConvertible, @unchecked Sendable
where Downstream.Input == URLSession.DataTaskPublisher.Output, Downstream.Failure == URLError {
    // @unchecked Sendable: `machine` is guarded by `lock`; `request` and `session` are immutable.
    private let lock = Lock()
    private var machine: DataTaskStateMachine<Downstream>  // Guarded by lock.
    private let request: URLRequest  // Immutable.
    private let session: URLSession  // Immutable.

    init(request: URLRequest, session: URLSession, downstream: Downstream) {
        self.request = request
        self.session = session
        machine = DataTaskStateMachine(downstream: downstream)
    }

    var description: String { "DataTaskPublisher" }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, lock.withLock({ machine.demandArrived() }) else { return }
        // Captured as an existential, so the @Sendable closure holds no generic metatype.
        let subscription: any DataTaskCompletionHandling = self
        URLSession.DataTaskPublisher.taskQueue.async { subscription.startTask() }
    }

    fileprivate func startTask() {
        guard lock.withLock({ machine.isStarting() }) else { return }
        let handler: any DataTaskCompletionHandling = self
        let task = session.dataTask(with: request) { data, response, error in
            handler.taskCompleted(data: data, response: response, error: error)
        }
        let created = lock.withLock { machine.taskCreated(task) }
        // A task cancelled while it was being created is resumed, then cancelled: a resumed task
        // reliably ends (its handler releases this subscription); one never resumed may not. A
        // cancel() after `taskCreated` queues its cancel behind this block, so it too comes after
        // the resume.
        task.resume()
        if !created { task.cancelUnlessCached(in: session) }
    }

    func cancel() {
        guard let task = lock.withLock({ machine.cancelled() }) else { return }
        let box = DataTaskBox(task: task, session: session)
        URLSession.DataTaskPublisher.taskQueue.async { box.task.cancelUnlessCached(in: box.session) }
    }

    fileprivate func taskCompleted(data: Data?, response: URLResponse?, error: (any Error)?) {
        guard let downstream = lock.withLock({ machine.taskCompleted() }) else { return }
        if let error {
            downstream.receive(completion: .failure(Self.urlError(error)))
        } else if let response {
            _ = downstream.receive((data ?? Data(), response))
            downstream.receive(completion: .finished)
        } else {
            downstream.receive(completion: .failure(URLError(.badServerResponse)))
        }
    }

    /// The task's error as a `URLError`: FoundationNetworking may hand over an `NSError` in
    /// `NSURLErrorDomain` that does not bridge by a plain cast.
    private static func urlError(_ error: any Error) -> URLError {
        if let urlError = error as? URLError { return urlError }
        let nsError = error as NSError
        if nsError.domain == NSURLErrorDomain {
            return URLError(URLError.Code(rawValue: nsError.code) ?? .unknown, userInfo: nsError.userInfo)
        }
        return URLError(.unknown, userInfo: [NSUnderlyingErrorKey: nsError])
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
