import Reactive
import Synchronization

/// Why a call to ``TermCursor/deliver(demand:to:cancelled:probe:)`` returned.
enum DeliveryOutcome {
    /// Every requested element was delivered; more need more demand.
    case demandExhausted
    /// The last element was delivered (or the sequence ran out): time to finish.
    case ended
    /// The subscription was cancelled; deliver nothing more.
    case cancelled
}
