import EventLoops
import HTTPServer
import Reactive

/// Answers a request with the one value of an upstream publisher: the JSON routes over the
/// upstream (`/articles`, `/articles/{id}`, `/users/{id}/profile`, `/dashboard/{userId}`).
///
/// The publisher's value (or failure) arrives on URLSession's threads; the body is rendered there
/// and the answer hops onto the request's loop.
enum UpstreamReply {
    /// Subscribes to `publisher`, renders its value with `render` and answers; a failure becomes its
    /// problem, and a `404` from the upstream becomes `404` with `notFound` as detail when given.
    static func respond<Output: Sendable>(
        _ context: RequestContext,
        to publisher: some Publisher<Output, UpstreamError>,
        notFound: String? = nil,
        render: @escaping @Sendable (Output) -> [UInt8]
    ) {
        let subscriber = SingleValueSubscriber<Output, UpstreamError> { result in
            let answer: Result<[UInt8], UpstreamError>?
            switch result {
            case .success(let value): answer = .success(render(value))
            case .failure(let error): answer = .failure(error)
            case nil: answer = nil
            }
            context.loop.execute {
                switch answer {
                case .success(let body)?: context.respond(json: body)
                case .failure(let error)?: context.respond(upstreamFailure: error, notFound: notFound)
                case nil: context.respond(problem: emptyProblem)
                }
            }
        }
        publisher.subscribe(subscriber)
        context.cancelOnClientGone(subscriber)
    }

    /// The problem for an upstream failure; an upstream `404` becomes a `404` saying `notFound`. It names
    /// the upstream resource at most (`/posts/1`), never the upstream's address.
    static func problem(for error: UpstreamError, notFound: String?) -> Problem {
        if let notFound, case .status(let target, 404, _) = error {
            var problem = Problem.notFound(notFound)
            problem.extensions = [("upstream", .string(target.resource)), ("upstreamStatus", 404)]
            return problem
        }
        return error.problem
    }

    /// The problem for a publisher that finished without a value (not something the client produces).
    static let emptyProblem = Problem(
        status: 502,
        type: Problem.Kind.upstreamFailed,
        title: "Upstream failed",
        detail: "the upstream call ended without a response"
    )
}

extension RequestContext {
    /// The header fields to send with this request's upstream calls: its `X-Request-ID` and trace context
    /// (see ``RequestContext/correlationHeaders``); the client drops unsafe fields.
    var upstreamHeaders: [String: String] { correlationHeaders }

    /// Answers an upstream failure with its problem (see ``UpstreamReply/problem(for:notFound:)``); the
    /// request log records its cause, absolute URL included.
    func respond(upstreamFailure error: UpstreamError, notFound: String? = nil) {
        respond(problem: UpstreamReply.problem(for: error, notFound: notFound), cause: error)
    }

    /// Notes the cause of an upstream failure that ends a stream, for the request's log line.
    func noteUpstreamFailure(_ error: UpstreamError) {
        _ = error.cause
    }
}

/// Requests one value and reports it, or the failure, or that none came, exactly once.
///
/// The value is reported as soon as it arrives (the publishers used here send one value, then finish).
///
/// **Ownership:** retained by the upstream subscription until it completes or is cancelled.
///
/// **Thread safety:** safe to call from any thread; the report runs on the delivering thread.
final class SingleValueSubscriber<Input, Failure: Error>: Subscriber, Cancellable, @unchecked Sendable {
    // @unchecked Sendable: `state` is guarded by `lock`; `report` is immutable.
    private enum State {
        /// Nothing reported yet; holding the subscription once it came. Next: `.done`.
        case waiting((any Subscription)?)
        /// Reported or cancelled. Final.
        case done
    }

    private let lock = Lock()
    private var state = State.waiting(nil)  // Guarded by lock.
    private let report: (Result<Input, Failure>?) -> Void

    /// - Parameter report: Called once with the value, the failure, or `nil` when the publisher
    ///   finished without a value. Not called after ``cancel()``.
    init(report: @escaping (Result<Input, Failure>?) -> Void) {
        self.report = report
    }

    func receive(subscription: any Subscription) {
        let accepted = lock.withLock { () -> Bool in
            guard case .waiting(nil) = state else { return false }
            state = .waiting(subscription)
            return true
        }
        if accepted {
            subscription.request(.max(1))
        } else {
            subscription.cancel()
        }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        if takeReport() { report(.success(input)) }
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        guard takeReport() else { return }
        switch completion {
        case .failure(let error): report(.failure(error))
        case .finished: report(nil)
        }
    }

    /// Stops waiting: cancels the upstream, and nothing is reported.
    func cancel() {
        let subscription = lock.withLock { () -> (any Subscription)? in
            defer { state = .done }
            if case .waiting(let subscription) = state { return subscription }
            return nil
        }
        subscription?.cancel()
    }

    /// Moves to `.done`; true for the one caller that gets to report.
    private func takeReport() -> Bool {
        lock.withLock {
            guard case .waiting = state else { return false }
            state = .done
            return true
        }
    }
}
