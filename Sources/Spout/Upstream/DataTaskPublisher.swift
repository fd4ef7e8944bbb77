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
    /// subscription stops delivery at once and cancels the `URLSessionTask` — on Linux only if the
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

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == URLError {
            subscriber.receive(subscription: DataTaskSubscription(request: request, session: session, subscriber: subscriber))
        }
    }
}

/// Where a data task's completion handler reports.
private protocol DataTaskCompletion: AnyObject, Sendable {
    func finish(data: Data?, response: URLResponse?, error: (any Error)?)
}

/// One data task: created and resumed on the first positive demand, cancelled with the subscription.
///
/// States: waiting (subscriber, no task) → running (subscriber, task) → done. Whoever moves the
/// state to done owns the subscriber's last call, so the completion handler and `cancel()` can race
/// without a double or late delivery: once `cancel()` has taken the state to done, nothing the task
/// reports afterwards reaches the subscriber. (A delivery that the completion handler had already
/// begun on the session's delegate queue when `cancel()` was called on another thread may still be
/// running as `cancel()` returns, as in Combine.) The lock is never held while calling the
/// subscriber or the task.
///
/// The task itself is cancelled with ``URLSessionTask/cancelUnlessCached(in:)``: always when the
/// session has no `URLCache` (so a hanging or slow upstream is cut off), never when it has one (a
/// cancel racing the task's start can then trap the process on Linux).
///
/// **Ownership:** retained by the subscriber until it cancels; the task's completion handler holds
/// it until the task ends.
///
/// **Thread safety:** safe to call `request(_:)` and `cancel()` from any thread (guarded by `lock`).
private final class DataTaskSubscription<S: Subscriber>: Subscription, DataTaskCompletion, @unchecked Sendable
where S.Input == URLSession.DataTaskPublisher.Output, S.Failure == URLError {
    // @unchecked: `state` is guarded by `lock`; `request` and `session` are immutable.
    private enum State {
        case waiting(S)
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
            task.cancelUnlessCached(in: session)
        }
    }

    func cancel() {
        let task: URLSessionDataTask? = lock.withLock {
            defer { state = .done }
            if case .running(_, let task) = state { return task }
            return nil
        }
        task?.cancelUnlessCached(in: session)
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
