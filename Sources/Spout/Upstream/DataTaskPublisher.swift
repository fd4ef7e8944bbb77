import Foundation
import Reactive

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSession {
    /// A publisher that runs one data task for `request` when it is first asked for a value.
    ///
    /// The same shape as Combine's: the output is `(data, response)`, the failure a `URLError`.
    /// Nothing is sent on the network until the subscriber requests a value, and cancelling the
    /// subscription cancels the `URLSessionTask`.
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

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == URLError {
            subscriber.receive(subscription: DataTaskSubscription(request: request, session: session, subscriber: subscriber))
        }
    }
}

/// One data task: created and resumed on the first positive demand, cancelled with the subscription.
///
/// States: waiting (subscriber, no task) → running (subscriber, task) → done. Whoever moves the
/// state to done owns the subscriber's last call, so the completion handler and `cancel()` can race
/// without a double or late delivery. The lock is never held while calling the subscriber or the task.
/// Where a data task's completion handler reports.
private protocol DataTaskCompletion: AnyObject, Sendable {
    func finish(data: Data?, response: URLResponse?, error: (any Error)?)
}

private final class DataTaskSubscription<S: Subscriber>: Subscription, DataTaskCompletion, @unchecked Sendable
where S.Input == URLSession.DataTaskPublisher.Output, S.Failure == URLError {
    private enum State {
        case waiting(S)
        case running(S, URLSessionDataTask)
        case done
    }

    private let lock = NSLock()
    private var state: State
    private let request: URLRequest
    private let session: URLSession

    init(request: URLRequest, session: URLSession, subscriber: S) {
        self.request = request
        self.session = session
        self.state = .waiting(subscriber)
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > .none else { return }
        let task: URLSessionDataTask? = lock.withLock {
            guard case .waiting(let subscriber) = state else { return nil }
            // Captured as an existential, so the @Sendable handler holds no generic metatype.
            let completion: any DataTaskCompletion = self
            let task = session.dataTask(with: request) { data, response, error in
                completion.finish(data: data, response: response, error: error)
            }
            state = .running(subscriber, task)
            return task
        }
        guard let task else { return }
        task.resume()
        // A cancel() that ran between creating the task and resuming it cancelled a suspended task,
        // which `resume()` may start anyway; cancel again (a no-op on a task that already ended).
        if lock.withLock({ if case .done = state { true } else { false } }) {
            task.cancel()
        }
    }

    func cancel() {
        let task: URLSessionDataTask? = lock.withLock {
            defer { state = .done }
            if case .running(_, let task) = state { return task }
            return nil
        }
        guard let task, !Self.isFinishing(task) else { return }
        task.cancel()
    }

    /// Whether `task` has received its whole body and is completing. Cancelling it then would race
    /// FoundationNetworking's own completion: on Linux, a `cancel()` that lands while a finished task is
    /// being removed from its session's registry traps inside Foundation ("Trying to remove task, but
    /// it's not in the registry"), which a test run hit once. Such a task is left to complete; its
    /// result is dropped, as this subscription is done. A body of unknown length (chunked, or still
    /// streaming) is always cancelled, so a hanging upstream is still cut off.
    private static func isFinishing(_ task: URLSessionDataTask) -> Bool {
        if task.state == .completed { return true }
        let expected = task.countOfBytesExpectedToReceive
        return expected >= 0 && task.response != nil && task.countOfBytesReceived >= expected
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
