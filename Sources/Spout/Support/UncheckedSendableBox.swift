import HTTPServer
import Reactive
import Synchronization

/// Carries a non-`Sendable` value onto a loop queue or a Dispatch worker.
///
/// Sound where used: the value is created on one thread, handed to exactly one queued block and
/// used only inside it, with the queue's own ordering as the hand-off.
struct UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}
