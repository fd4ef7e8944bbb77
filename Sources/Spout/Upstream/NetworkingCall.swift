import Dispatch
import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The calls into FoundationNetworking that an ``UpstreamSession`` makes, each on a lane's queue.
package enum NetworkingCall: String, Sendable, CaseIterable {
    /// `URLSession(configuration:delegate:delegateQueue:)`, at the first transfer.
    case createSession
    /// `URLSession.dataTask(with:)` then `URLSessionTask.resume()` for one transfer.
    case start
    /// `URLSessionTask.cancel()`.
    case cancel
    /// `URLSession.invalidateAndCancel()`.
    case invalidate
}
