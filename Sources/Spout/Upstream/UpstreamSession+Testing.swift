import Foundation
import Reactive
import Synchronization

/// One call into FoundationNetworking as ``UpstreamSession`` made it, for the tests that prove none
/// runs on an event loop.
package struct NetworkingCallRecord: Sendable {
    /// What was called.
    package var call: NetworkingCall
    /// The request concerned, if any.
    package var url: URL?
    /// The lane whose queue the call was queued on.
    package var lane: Int
    /// Whether the call ran on its lane's networking queue.
    package var ranOnNetworkingQueue: Bool
    /// Whether the call ran on an event-loop queue (it must not).
    package var ranOnEventLoop: Bool
    /// Whether whoever asked for the call (a route subscribing, a client leaving) was on an event loop.
    package var requestedOnEventLoop: Bool
}

extension UpstreamSession {
    private static let observers = LockedState<(next: UInt64, all: [UInt64: @Sendable (NetworkingCallRecord) -> Void])>(
        (0, [:])
    )

    /// Calls `observer` with every FoundationNetworking call any session makes, until the returned token
    /// is passed to ``_removeObserver(_:)``. For tests; observers run on the networking queue, so they
    /// must be quick and must not block.
    package static func _addObserver(_ observer: @escaping @Sendable (NetworkingCallRecord) -> Void) -> UInt64 {
        observers.withLock { state in
            state.next += 1
            state.all[state.next] = observer
            return state.next
        }
    }

    /// Stops calling the observer registered under `token`.
    package static func _removeObserver(_ token: UInt64) {
        _ = observers.withLock { $0.all.removeValue(forKey: token) }
    }

    static func report(_ record: NetworkingCallRecord) {
        let current = observers.withLock { $0.all.isEmpty ? [] : Array($0.all.values) }
        for observer in current { observer(record) }
    }
}
