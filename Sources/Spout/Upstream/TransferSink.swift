import Dispatch
import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where a task's delegate callbacks go: the transfer that started it.
protocol TransferSink: AnyObject, Sendable {
    /// On the networking queue of `lane`: create and resume the task in `session` (`nil` once invalidated).
    func start(in session: URLSession?, lane: NetworkingLane)
    /// The response head arrived.
    func responded(_ response: URLResponse)
    /// Body bytes arrived.
    func received(_ data: Data)
    /// The task ended, with `error` if it failed or was cancelled.
    func completed(_ error: (any Error)?)
}
