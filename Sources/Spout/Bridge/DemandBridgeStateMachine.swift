import Reactive

/// The lifecycle of one demand bridge: which subscription it holds, how much it has asked for, and
/// whether the stream has ended and why.
///
/// Events are named for what happened; each returns what the bridge must do next. The machine
/// never touches the writer or the subscription itself.
///
/// **Thread safety:** value type; the bridge keeps it confined to the connection's loop.
struct DemandBridgeStateMachine {
    private enum State {
        /// Created; no subscription yet. Next: `.streaming`, or `.ended` if the client left first.
        case awaitingSubscription
        /// Holding the upstream subscription; `outstanding` values were requested and not yet received.
        /// Next: `.ended`.
        case streaming(any Subscription, outstanding: Int)
        /// Ended for the given reason; nothing more is written. Final.
        case ended(StreamEnd)
    }

    /// What the bridge does after an event.
    enum Action {
        /// Nothing.
        case none
        /// Ask the subscription for `window` more values.
        case request(any Subscription, window: Int)
        /// Cancel the subscription (the client is gone, or it arrived after the end).
        case cancel(any Subscription)
        /// Write the end frame for `reason` and finish the response; cancel the subscription if given.
        case end(StreamEnd, cancelling: (any Subscription)?)
        /// Write the failure frame for `problem` and finish the response.
        case fail(Problem)
    }

    private var state: State = .awaitingSubscription

    /// Whether the stream has ended (for any reason).
    var hasEnded: Bool {
        if case .ended = state { return true }
        return false
    }

    /// The reason the stream ended, once it has.
    var endReason: StreamEnd? {
        if case .ended(let reason) = state { return reason }
        return nil
    }

    /// The publisher handed over its subscription. `window` is the first request, or 0 if the writer
    /// is not writable yet.
    mutating func subscribed(_ subscription: any Subscription, window: Int) -> Action {
        switch state {
        case .awaitingSubscription:
            state = .streaming(subscription, outstanding: window)
            return window > 0 ? .request(subscription, window: window) : .none
        case .streaming:
            // A second subscription is the publisher's bug; refuse it rather than trap.
            return .cancel(subscription)
        case .ended:
            return .cancel(subscription)
        }
    }

    /// `count` values arrived and were written. When that used up the outstanding window and the writer
    /// can take `nextWindow()` more (asked only then; 0 when it cannot), the next window is due: `.request`.
    mutating func valuesWritten(_ count: Int, nextWindow: () -> Int) -> Action {
        guard case .streaming(let subscription, let outstanding) = state else { return .none }
        // A publisher that over-delivers is tolerated: the count never goes below zero.
        let remaining = max(outstanding &- count, 0)
        if remaining == 0 {
            let window = nextWindow()
            if window > 0 {
                state = .streaming(subscription, outstanding: window)
                return .request(subscription, window: window)
            }
        }
        state = .streaming(subscription, outstanding: remaining)
        return .none
    }

    /// Whether a value that arrived now should be written (false after the end: late values are dropped).
    var acceptsValues: Bool {
        if case .streaming = state { return true }
        return false
    }

    /// The writer drained below its low watermark and can take `window` more values.
    mutating func becameWritable(window: Int) -> Action {
        guard case .streaming(let subscription, let outstanding) = state, outstanding == 0, window > 0 else {
            return .none
        }
        state = .streaming(subscription, outstanding: window)
        return .request(subscription, window: window)
    }

    /// The publisher finished.
    mutating func finished() -> Action {
        guard case .streaming = state else { return .none }
        state = .ended(.completed)
        return .end(.completed, cancelling: nil)
    }

    /// The publisher failed; `problem` describes the failure to the client.
    mutating func failed(_ problem: Problem) -> Action {
        guard case .streaming = state else { return .none }
        state = .ended(.error)
        return .fail(problem)
    }

    /// The client went away (or the server closed the connection).
    mutating func clientGone() -> Action {
        switch state {
        case .awaitingSubscription:
            state = .ended(.clientGone)
            return .none
        case .streaming(let subscription, _):
            state = .ended(.clientGone)
            return .cancel(subscription)
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
        case .streaming(let subscription, _):
            state = .ended(.shutdown)
            return .end(.shutdown, cancelling: subscription)
        case .ended:
            return .none
        }
    }
}
