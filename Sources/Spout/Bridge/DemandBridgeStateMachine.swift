import HTTPServer
import Reactive

/// The demand side of one demand bridge: which subscription it holds, how much it asked for, whether it is
/// inside its own request, and whether the stream has ended and why.
///
/// Events are named for what happened; each returns what the bridge must do next. The machine never
/// touches the writer or the subscription itself, and keeps no copy of the writer's state: the writer's
/// writability comes in as the window the bridge computes from it when an event needs one.
///
///     awaitingSubscription ─→ idle ⇄ requesting ─→ yielded ─→ idle
///                               │         │           │
///                               │   completingInRequest│
///                               ╰─────────┴───────────┴──→ ended
///
/// Re-entrancy is a state: while the bridge is inside its own `request(_:)` on the loop the machine is
/// `requesting`, and a value that arrives then (from a synchronous producer, on the loop) goes straight
/// into the buffer the writer lent for the call; a completion that arrives then is held until the call
/// returns. Which thread a call comes from is the bridge's business (it hops everything that is not on the
/// loop), not the machine's.
///
/// **Ownership:** Stored inline in its ``DemandBridge``.
///
/// **Thread safety:** Value type; the bridge keeps it confined to the connection's loop.
struct DemandBridgeStateMachine {
    enum State {
        /// Created; no subscription yet. Next: `idle`, `ended`.
        case awaitingSubscription
        /// Holding the subscription, with `outstanding` values asked for and not received, outside any
        /// request of ours: values that arrive are written one call at a time. Next: `requesting` (when the
        /// bridge makes the request an action asked for), `ended`.
        case idle(any Subscription, outstanding: Int)
        /// Inside our own `request(window)` to the subscription, on the loop, with the writer's buffer lent
        /// as `session` for the duration: values that arrive now are appended to it, and the next window is
        /// decided when the call returns. Next: `idle`, `yielded`, `completingInRequest`, `ended`.
        case requesting(any Subscription, window: Int, session: UnsafeMutablePointer<OutboundBuffer>)
        /// A synchronous producer filled a loop turn's worth of bytes; the bridge let the loop serve its
        /// other connections and queued a resume. Next: `idle`, `ended`.
        case yielded(any Subscription)
        /// The publisher completed or failed inside our request; the end is written once the request
        /// returns (the buffer is lent until then). Next: `ended`.
        case completingInRequest(Completion)
        /// Ended for the given reason; the subscription is released and late values are dropped. Final.
        case ended(StreamEnd)
    }

    /// How the publisher ended.
    enum Completion {
        /// Ended without failing: `completed`, or a reason the producer gives (a channel's `overflow`).
        case finished(StreamEnd)
        case failed(Problem)
    }

    /// What the bridge does after an event.
    enum Action {
        /// Nothing.
        case none
        /// Ask the subscription for `window` more values, inside a request session (``requestStarted(session:)``).
        case request(any Subscription, window: Int)
        /// Cancel a subscription that came after the end (or a second one).
        case cancel(any Subscription)
        /// End the stream: cancel the subscription if given, write the end frame for `reason`, report the
        /// summary and finish the response.
        case end(StreamEnd, cancelling: (any Subscription)?)
        /// End the stream with the failure frame for `problem` (reason `error`), report and finish.
        case fail(Problem)
        /// The client is gone (the response is closed already): cancel the subscription if given and
        /// report the summary with reason `clientGone`.
        case abandon(cancelling: (any Subscription)?)
        /// Let the loop serve its other connections, then send ``resumed(window:)``.
        case yield
    }

    /// Where a value that arrives now goes.
    enum Delivery: Equatable {
        /// Into the buffer lent for the current request.
        case appendToSession(UnsafeMutablePointer<OutboundBuffer>)
        /// Through the writer, then ``valuesWritten(_:nextWindow:)``.
        case write
        /// Nowhere: the stream has ended (or is about to).
        case drop
    }

    private(set) var state: State = .awaitingSubscription

    /// The reason the stream ended, once it has.
    var endReason: StreamEnd? {
        if case .ended(let reason) = state { return reason }
        return nil
    }

    /// The publisher handed over its subscription; the writer can take `window` values now (0: none yet).
    mutating func subscribed(_ subscription: any Subscription, window: Int) -> Action {
        switch state {
        case .awaitingSubscription:
            state = .idle(subscription, outstanding: window)
            return window > 0 ? .request(subscription, window: window) : .none
        case .idle, .requesting, .yielded, .completingInRequest, .ended:
            // A second subscription is the publisher's bug; one after the end is late. Refuse either.
            return .cancel(subscription)
        }
    }

    /// The bridge is about to call the subscription's `request` for the window a `.request` action asked
    /// for, with the writer's buffer lent as `session`.
    mutating func requestStarted(session: UnsafeMutablePointer<OutboundBuffer>) {
        guard case .idle(let subscription, let outstanding) = state, outstanding > 0 else {
            preconditionFailure("internal inconsistency: request started in \(state)")
        }
        state = .requesting(subscription, window: outstanding, session: session)
    }

    /// `count` values arrived on the loop, in order with everything before them.
    func delivery(of count: Int) -> Delivery {
        switch state {
        case .requesting(_, _, let session):
            return .appendToSession(session)
        case .idle, .yielded:
            return .write
        case .awaitingSubscription, .completingInRequest, .ended:
            return .drop
        }
    }

    /// `count` values that arrived outside a request were written. When that used up the outstanding
    /// window and the writer can take `nextWindow()` more (asked only then; 0 when it cannot), the next
    /// window is due.
    mutating func valuesWritten(_ count: Int, nextWindow: () -> Int) -> Action {
        guard case .idle(let subscription, let outstanding) = state else { return .none }
        // A publisher that over-delivers is tolerated: the count never goes below zero.
        let remaining = max(outstanding &- count, 0)
        if remaining == 0 {
            let window = nextWindow()
            if window > 0 {
                state = .idle(subscription, outstanding: window)
                return .request(subscription, window: window)
            }
        }
        state = .idle(subscription, outstanding: remaining)
        return .none
    }

    /// Our request returned, `received` values having arrived inside it. If the producer filled the window
    /// synchronously, the next one is due at once: `.request` (the bridge loops rather than recursing)
    /// unless `turnUsedUp` says this loop turn has written enough (`.yield`) or the writer can take
    /// nothing more (`nextWindow()` is 0: wait for the writable edge).
    mutating func requestReturned(received: Int, turnUsedUp: Bool, nextWindow: () -> Int) -> Action {
        switch state {
        case .requesting(let subscription, let window, _):
            let outstanding = max(window &- received, 0)
            guard received > 0, outstanding == 0 else {
                // An asynchronous producer (its values come later), or one that delivered part of the window.
                state = .idle(subscription, outstanding: outstanding)
                return .none
            }
            if turnUsedUp {
                state = .yielded(subscription)
                return .yield
            }
            let next = nextWindow()
            state = .idle(subscription, outstanding: next)
            return next > 0 ? .request(subscription, window: next) : .none
        case .completingInRequest(.finished(let reason)):
            state = .ended(reason)
            return .end(reason, cancelling: nil)
        case .completingInRequest(.failed(let problem)):
            state = .ended(.error)
            return .fail(problem)
        case .ended:
            return .none  // the client left while the request ran
        case .awaitingSubscription, .idle, .yielded:
            preconditionFailure("internal inconsistency: request returned in \(state)")
        }
    }

    /// The resume queued by `.yield` runs; the writer can take `window` values.
    mutating func resumed(window: Int) -> Action {
        guard case .yielded(let subscription) = state else { return .none }
        state = .idle(subscription, outstanding: window)
        return window > 0 ? .request(subscription, window: window) : .none
    }

    /// The writer drained below its low watermark and can take `window` more values.
    mutating func becameWritable(window: Int) -> Action {
        guard case .idle(let subscription, 0) = state, window > 0 else {
            return .none  // values still outstanding, a request or resume decides, or the stream ended
        }
        state = .idle(subscription, outstanding: window)
        return .request(subscription, window: window)
    }

    /// The publisher finished (`completed`), or ended the stream for `reason`.
    mutating func finished(_ reason: StreamEnd = .completed) -> Action {
        completed(.finished(reason))
    }

    /// The publisher failed; `problem` describes the failure to the client.
    mutating func failed(_ problem: Problem) -> Action {
        completed(.failed(problem))
    }

    private mutating func completed(_ completion: Completion) -> Action {
        switch state {
        case .requesting:
            state = .completingInRequest(completion)
            return .none
        case .awaitingSubscription, .idle, .yielded:
            switch completion {
            case .finished(let reason):
                state = .ended(reason)
                return .end(reason, cancelling: nil)
            case .failed(let problem):
                state = .ended(.error)
                return .fail(problem)
            }
        case .completingInRequest, .ended:
            return .none
        }
    }

    /// The response closed without us ending it: the client went away, or the server closed the connection.
    mutating func clientGone() -> Action {
        switch state {
        case .awaitingSubscription, .completingInRequest:
            state = .ended(.clientGone)
            return .abandon(cancelling: nil)
        case .idle(let subscription, _), .requesting(let subscription, _, _), .yielded(let subscription):
            state = .ended(.clientGone)
            return .abandon(cancelling: subscription)
        case .ended:
            return .none
        }
    }

    /// The server is shutting down: end with a final frame that says so.
    mutating func shutdownRequested() -> Action {
        switch state {
        case .awaitingSubscription:
            state = .ended(.shutdown)
            return .end(.shutdown, cancelling: nil)
        case .idle(let subscription, _), .yielded(let subscription):
            state = .ended(.shutdown)
            return .end(.shutdown, cancelling: subscription)
        case .requesting:
            preconditionFailure("internal inconsistency: shutdown inside the bridge's own request")
        case .completingInRequest, .ended:
            return .none
        }
    }
}
