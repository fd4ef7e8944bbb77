import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSessionTask {
    /// Cancels the task unless its session has a `URLCache`, where a cancel can trap the process on Linux;
    /// returns whether it cancelled.
    ///
    /// **The trap.** On Linux (FoundationNetworking, swift-corelibs-foundation) a `cancel()` that lands
    /// while a task is starting can trap inside Foundation with "Trying to access a behaviour for a task
    /// that in not in the registry" (the message seen in an earlier test run, "Trying to remove task, but
    /// it's not in the registry", comes from the same registry). `bench/UpstreamCancelStress` shows the
    /// sequence (`--path direct --trace`): `cancel()` returns while the task is `.running` with no
    /// response yet; the task then loads its whole body and its completion handler gets the data (so
    /// the completion removed the task from the session's registry); only then does the block that
    /// `cancel()` left behind run, report the cancellation, look the task up in the registry, and trap.
    /// The backtrace is `URLSession.behaviour(for:)` ← `_ProtocolClient.urlProtocol(task:
    /// didFailWithError:)` ← a closure inside `URLSessionTask.cancel()`.
    ///
    /// **What it depends on.** The cancel's block is deferred past the whole load only when the task's
    /// protocol is still being created when `cancel()` runs: with a `URLCache` on the session, the
    /// first `resume()` creates it asynchronously, after `URLCache.getCachedResponse(for:
    /// completionHandler:)` has answered from a background queue (`URLSessionTask._getProtocol`,
    /// `_satisfyProtocolRequest(with:)` in the library's symbols), and callbacks wait for it; a
    /// background-priority lookup can take hundreds of milliseconds on a busy machine. With no
    /// `URLCache` the protocol is created at once, inside `resume()`, and `cancel()` enqueues its block
    /// on the task's serial work queue before it returns. Measured (`swift run -c release
    /// upstream-cancel-stress --runs 10 --iterations 2000 --lanes 1 --anchor subscribe --max-delay-us
    /// 300 --path direct`): with the cache, 10 of 10 runs trapped; with `--no-cache`, 0 traps in 20,000
    /// cancels, of which about 60 % came too late to stop the load (the task still delivered its data).
    /// Cancelling from the session's delegate queue, or after its pending blocks ran, did not help
    /// (10 of 10 runs trapped with the cache).
    ///
    /// **So:** a task of a session without a `URLCache` is cancelled (a hanging or slow upstream is cut
    /// off at once); one with a `URLCache` (`URLSession.shared`, `.default` and `.ephemeral`
    /// configurations unless `urlCache` is set to `nil`) is left to run to its end or its timeout, and
    /// the caller drops its result. Spout's ``UpstreamClient`` creates its session without one.
    ///
    /// - Parameter session: The session that created the task.
    /// - Returns: `true` if `cancel()` was called.
    @discardableResult
    func cancelUnlessCached(in session: URLSession) -> Bool {
        #if canImport(FoundationNetworking)
        guard session.configuration.urlCache == nil else { return false }
        #endif
        cancel()
        return true
    }
}
