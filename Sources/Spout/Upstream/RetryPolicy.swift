import Dispatch
import Foundation
import FoundationNetworking
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The arguments of one `retry(_:withBackoff:…)`, built per request.
///
/// **Thread safety:** value type; not shared (its closures capture the request's tracker).
struct RetryPolicy {
    var maxRetries: Int
    var backoff: Backoff
    var shouldRetry: (UpstreamError) -> Bool
    var retryAfter: (UpstreamError) -> Duration?
}
