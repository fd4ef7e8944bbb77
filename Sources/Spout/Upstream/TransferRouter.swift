import Dispatch
import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The delegate of an ``UpstreamSession``'s `URLSession`: hands each task's callbacks to the transfer
/// registered for its task identifier, and drops those of tasks no longer registered.
///
/// **Ownership:** retained by its ``NetworkingLane`` and by the `URLSession` until invalidated; it
/// retains each registered transfer until its task reports its end — after a cancel too, which lets
/// the transfer see when a runaway body has really stopped.
///
/// **Thread safety:** safe to call from any thread (`sinks` is behind a `Mutex`); the callbacks come
/// on the session's delegate queue.
final class TransferRouter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked Sendable: the only state is `sinks`, a Mutex.
    private let sinks = LockedState<[Int: any TransferSink]>([:])

    /// Sends the callbacks of task `id` to `sink`.
    func register(_ id: Int, _ sink: any TransferSink) {
        sinks.withLock { $0[id] = sink }
    }

    /// The number of transfers registered (for tests).
    var count: Int { sinks.withLock { $0.count } }

    private func sink(_ task: URLSessionTask) -> (any TransferSink)? {
        let id = task.taskIdentifier
        return sinks.withLock { $0[id] }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        sink(dataTask)?.responded(response)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        sink(dataTask)?.received(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let id = task.taskIdentifier
        let sink = sinks.withLock { $0.removeValue(forKey: id) }
        sink?.completed(error)
    }
}
