import Foundation
import Glibc
import Reactive
import Synchronization

/// One libcurl multi handle and the thread that drives it: where every upstream transfer of an
/// ``UpstreamSession`` runs, from its first byte to the closing of its connection.
///
/// **Why not `URLSession`.** On Linux, FoundationNetworking runs libcurl on the session's work queue and
/// hands every piece of body to the delegate through an operation queue. `URLSessionTask.cancel()` is a
/// `sync` onto that work queue, which a body pouring in keeps busy, and each piece read meanwhile is
/// queued for the delegate whatever the delegate does with it. With 30 endless bodies at once the cancels of
/// the transfers that had ended (by deadline or body limit) did not land: 15 s after the last answer the
/// process still held 5 upstream connections, read on at 1.3 cores and grew by 4 to 8 MB a second. Here the
/// thread that reads is the one that ends: a cancel is a command plus `curl_multi_wakeup`, the thread
/// removes the handle at its next turn (a transfer removed before it completes has its connection closed,
/// not kept), and the callbacks refuse every byte of a transfer that is over its limit or cancelled, so
/// nothing is read past the end and nothing is queued.
///
/// **The thread.** Started by the first transfer, it loops: commands (start, cancel), `curl_multi_perform`,
/// finished transfers (`curl_multi_info_read`), then `curl_multi_poll` for at most ``pollMilliseconds``
/// (libcurl shortens the wait to its own next timeout, and ``wake()`` cuts it short). It only moves bytes:
/// each transfer's owner gets its events on this thread and hands its subscriber's calls elsewhere. Once
/// ``invalidate()`` is called and every transfer has ended, the thread cleans up the multi handle and ends.
///
/// **Ownership:** owned by its ``UpstreamSession``; the thread retains it until it ends.
///
/// **Thread safety:** ``start(_:)``, ``cancel(_:)`` and ``invalidate()`` are safe from any thread and never
/// block on I/O; everything else runs on the thread.
final class CurlDriver: @unchecked Sendable {
    // @unchecked Sendable: `inbox` is a lock, `runningCount` an atomic; `running` and the multi handle are confined
    // to the thread.
    /// What other threads ask of the thread.
    private enum Command {
        case start(CurlTask)
        case cancel(CurlTask)
    }

    private struct Inbox {
        var commands: [Command] = []
        var isInvalidated = false
        var threadStarted = false
    }

    /// The most the thread sleeps with no event while transfers run (libcurl's own timers wake it sooner).
    static let pollMilliseconds: Int32 = 1_000
    /// The most it sleeps with none (a command wakes it at once).
    static let idleMilliseconds: Int32 = 60_000

    let curl: LibCurl
    private let multi: OpaquePointer
    private let inbox = LockedState(Inbox())
    /// The transfers added to the multi handle, by easy handle. // Confined to the thread.
    private var running: [OpaquePointer: CurlTask] = [:]
    /// How many transfers are added to the multi handle, readable from any thread (for the metric and tests).
    private let runningCount = Atomic<Int>(0)
    private let name: String

    /// A driver on the system's libcurl, or `nil` when libcurl cannot be loaded or its multi handle made.
    init?(name: String = "spout.upstream", curl: LibCurl? = LibCurl.shared) {
        guard let curl, let multi = curl.multiInit() else { return nil }
        self.curl = curl
        self.multi = multi
        self.name = name
    }

    deinit {
        // A started thread retains the driver until it has cleaned up the multi handle itself.
        if !inbox.withLock({ $0.threadStarted }) { _ = curl.multiCleanup(multi) }
    }

    /// The transfers whose connections are open or opening.
    var activeTransfers: Int { runningCount.load(ordering: .relaxed) }

    /// Starts `task` on the thread; returns `false` (and does nothing) once the driver is invalidated.
    func start(_ task: CurlTask) -> Bool {
        submit(.start(task))
    }

    /// Ends `task` at the thread's next turn: its handle is removed and its connection closed. Nothing more
    /// is reported for it. Returns at once.
    func cancel(_ task: CurlTask) {
        task.isCancelled.store(true, ordering: .relaxed)
        _ = submit(.cancel(task))
    }

    /// Ends every transfer (each owner hears of a cancellation) and refuses new ones; the thread ends once
    /// they are gone.
    func invalidate() {
        let started = inbox.withLock { inbox -> Bool in
            inbox.isInvalidated = true
            return inbox.threadStarted
        }
        if started { _ = curl.multiWakeup(multi) }
    }

    private func submit(_ command: Command) -> Bool {
        let (accepted, startThread) = inbox.withLock { inbox -> (Bool, Bool) in
            guard !inbox.isInvalidated else { return (false, false) }
            inbox.commands.append(command)
            defer { inbox.threadStarted = true }
            return (true, !inbox.threadStarted)
        }
        guard accepted else { return false }
        if startThread {
            let thread = Thread { [self] in run() }
            thread.name = name
            thread.start()
        } else {
            _ = curl.multiWakeup(multi)
        }
        return true
    }

    // MARK: The thread

    private func run() {
        while true {
            let (commands, invalidated) = inbox.withLock { inbox in
                defer { inbox.commands.removeAll(keepingCapacity: true) }
                return (inbox.commands, inbox.isInvalidated)
            }
            for command in commands {
                switch command {
                case .start(let task):
                    if invalidated { task.end(code: CurlTask.cancelledCode, curl: curl) } else { add(task) }
                case .cancel(let task):
                    remove(task)
                    task.forget()
                }
            }
            if invalidated {
                for task in Array(running.values) {
                    remove(task)
                    task.end(code: CurlTask.cancelledCode, curl: curl)
                }
                break
            }
            var stillRunning: Int32 = 0
            _ = curl.multiPerform(multi, &stillRunning)
            collectFinished()
            _ = curl.multiPoll(multi, nil, 0, running.isEmpty ? Self.idleMilliseconds : Self.pollMilliseconds, nil)
        }
        _ = curl.multiCleanup(multi)
    }

    /// Creates `task`'s easy handle and adds it, unless its owner no longer wants it.
    private func add(_ task: CurlTask) {
        guard !task.isCancelled.load(ordering: .relaxed) else {
            task.forget()
            return
        }
        guard let easy = task.makeHandle(curl: curl) else { return }
        guard curl.multiAdd(multi, easy) == 0 else {
            task.releaseHandle(curl: curl)
            task.end(code: CurlTask.internalErrorCode, curl: curl)
            return
        }
        running[easy] = task
        runningCount.store(running.count, ordering: .relaxed)
    }

    /// Removes `task`'s handle (closing its connection if the transfer had not completed) and frees it.
    private func remove(_ task: CurlTask) {
        guard let easy = task.easy, running.removeValue(forKey: easy) != nil else { return }
        _ = curl.multiRemove(multi, easy)
        task.releaseHandle(curl: curl)
        runningCount.store(running.count, ordering: .relaxed)
    }

    /// Ends the transfers libcurl reports done.
    private func collectFinished() {
        var queued: Int32 = 0
        // CURLMsg: CURLMSG (an int, padded to 8), `CURL *easy_handle`, then a union whose `CURLcode result`
        // is an int at offset 16.
        while let message = curl.multiInfoRead(multi, &queued) {
            guard message.load(as: Int32.self) == LibCurl.messageDone,
                let easy = message.load(fromByteOffset: 8, as: OpaquePointer?.self),
                let task = running[easy]
            else { continue }
            let code = message.load(fromByteOffset: 16, as: Int32.self)
            remove(task)
            task.end(code: code, curl: curl)
        }
    }
}
