import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The life of one ``BodyTransfer`` subscription: demand, the task, the response and the body read so
/// far, and the end.
///
/// Every event returns what the owner must do; the owner calls the subscriber and the transfer's driver
/// outside its lock. Whoever moves the state to `.done` owns the subscriber's last call, so the
/// driver's callbacks, a cancel and a limit crossed can race without a double or a late delivery.
///
/// `Task` is what runs the transfer (a ``CurlTask`` in the service; anything in the machine's own tests).
///
/// **Thread safety:** value type; its subscription keeps it under a lock.
struct BodyTransferStateMachine<Task> {
    /// The body read so far and the response it belongs to.
    struct Body {
        var response: HTTPURLResponse?
        var data = Data()
        /// Whether `data` was sized from the `Content-Length` (so it holds no slack worth dropping).
        var isPresized = false
    }

    private enum State {
        /// Subscribed; nothing asked for yet. Next: `.starting`, `.done`.
        case waiting
        /// Asked for; the task is being created. Next: `.running`, `.done`.
        case starting
        /// The task runs; the body grows. Next: `.done`.
        case running(Task, Body)
        /// Delivered, failed or cancelled. Final.
        case done
    }

    /// What the owner does once a task was created.
    enum StartAction {
        /// Start it.
        case start
        /// Drop it unstarted: the subscription was cancelled while it was being created.
        case drop
    }

    /// What the owner does after a response or body bytes arrived.
    enum ReceiveAction {
        case none
        /// Fail the subscriber with the error and cancel the task.
        case fail(BodyTransferError, cancel: Task)
    }

    /// What the owner does once the task ended.
    enum CompletionAction {
        case none
        /// Send the body and the response, then finish.
        case deliver(Data, HTTPURLResponse, isPresized: Bool)
        /// Fail the subscriber.
        case fail(BodyTransferError)
    }

    /// The most body bytes read.
    let limit: Int
    private var state = State.waiting

    init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// Whether the transfer has ended (delivered, failed or cancelled).
    var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    /// The subscriber asked for a value; returns whether to start the task.
    mutating func demanded() -> Bool {
        guard case .waiting = state else { return false }
        state = .starting
        return true
    }

    /// The task was created.
    mutating func taskCreated(_ task: Task) -> StartAction {
        guard case .starting = state else { return .drop }
        state = .running(task, Body())
        return .start
    }

    /// The response head arrived: a `Content-Length` over the limit ends the transfer.
    mutating func responded(_ http: HTTPURLResponse) -> ReceiveAction {
        guard case .running(let task, var body) = state else { return .none }
        let declared = http.expectedContentLength
        if declared > Int64(limit) {
            state = .done
            return .fail(.tooLarge(limit: limit, declared: Int(clamping: declared)), cancel: task)
        }
        body.response = http
        if declared > 0 {
            body.data.reserveCapacity(Int(declared))
            body.isPresized = true
        }
        state = .running(task, body)
        return .none
    }

    /// Body bytes arrived: kept while within the limit; crossing it ends the transfer.
    mutating func received(_ data: UnsafeRawBufferPointer) -> ReceiveAction {
        guard case .running(let task, var body) = state else { return .none }
        guard data.count <= limit - body.data.count else {
            state = .done
            return .fail(.tooLarge(limit: limit, declared: nil), cancel: task)
        }
        // Out of the state while it grows, so the append does not copy it.
        state = .starting
        if let base = data.baseAddress { body.data.append(base.assumingMemoryBound(to: UInt8.self), count: data.count) }
        state = .running(task, body)
        return .none
    }

    /// The task ended, with `error` if it failed.
    mutating func completed(_ error: URLError?) -> CompletionAction {
        guard case .running(_, let body) = state else { return .none }
        state = .done
        if let error {
            return .fail(.transport(error))
        }
        guard let response = body.response else { return .fail(.notHTTP) }
        return .deliver(body.data, response, isPresized: body.isPresized)
    }

    /// The subscriber cancelled: returns the task to cancel, if one runs.
    mutating func cancelled() -> Task? {
        defer { state = .done }
        if case .running(let task, _) = state { return task }
        return nil
    }
}
