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
    /// that in not in the registry" (the message of an earlier test run, "Trying to remove task, but
    /// it's not in the registry", is another check of the same registry; the stress never showed it).
    /// `bench/UpstreamCancelStress` shows the sequence (`--path direct --trace`): `cancel()` returns while the task is `.running` with no
    /// response yet; the task then loads its whole body and its completion handler gets the data (so
    /// the completion removed the task from the session's registry); only then does the block that
    /// `cancel()` left behind run, report the cancellation, look the task up in the registry, and trap.
    /// The backtrace is `URLSession.behaviour(for:)` ← `_ProtocolClient.urlProtocol(task:
    /// didFailWithError:)` ← a closure inside `URLSessionTask.cancel()`.
    ///
    /// **What it depends on** (measured; the inside of the library is inferred from its symbols). The
    /// session's `URLCache`. The cancel's block can only be deferred past the whole load if the task's
    /// protocol is still being created when `cancel()` runs: with a `URLCache` on the session, the
    /// first `resume()` creates it asynchronously, after `URLCache.getCachedResponse(for:
    /// completionHandler:)` has answered from a background queue (`URLSessionTask._getProtocol`,
    /// `_satisfyProtocolRequest(with:)` in the library's symbols), and callbacks wait for it; a
    /// background-priority lookup can take hundreds of milliseconds on a busy machine. With no
    /// `URLCache` the protocol is created at once, inside `resume()`, and `cancel()` enqueues its block
    /// on the task's serial work queue before it returns. Measured (`swift run -c release
    /// upstream-cancel-stress --runs 10 --iterations 2000 --lanes 1 --anchor subscribe --max-delay-us
    /// 300 --path direct`): with the cache, 10 of 10 runs trapped; with `--no-cache`, 0 traps in 40,000
    /// cancels (20 runs), two thirds of which came too late to stop the load (the task still delivered
    /// its data), so cancels did land on completing tasks.
    /// With the cache, cancelling from the session's delegate queue and waiting there for the cancel's
    /// block did not help (10 of 10 runs trapped), nor did cancelling only after `getAllTasks` had
    /// answered, i.e. after the session's work queue had inserted the task in its registry (9 of 10).
    ///
    /// **So:** a task of a session without a `URLCache` is cancelled (a hanging or slow upstream is cut
    /// off at once); one with a `URLCache` (`URLSession.shared`, and `.default` and `.ephemeral`
    /// configurations unless `urlCache` is set to `nil`) is left to run to its end or its timeout, and
    /// the caller drops its result. (Spout's upstream client no longer uses `URLSession`: it runs libcurl itself.)
    ///
    /// - Parameter session: The session that created the task.
    /// - Returns: `true` if `cancel()` was called.
    @discardableResult
    package func cancelUnlessCached(in session: URLSession) -> Bool {
        #if canImport(FoundationNetworking)
            guard session.configuration.urlCache == nil else { return false }
        #endif
        cancel()
        return true
    }
}
