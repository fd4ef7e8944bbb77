import Dispatch
import Glibc
import Reactive
import Synchronization

/// Notices when the TLS certificate and key files change (as cert-manager, certbot or an operator replace them) and
/// asks for a reload: a bounded poll of the files' identity, off the event loops.
///
/// Every ``interval`` it `stat`s each file, following symbolic links, and compares the device, inode, size and
/// modification time with what was loaded. A change is acted on once it has stayed the same for one more interval,
/// so a writer that replaces the certificate and then the key, or writes a file in several steps, is read once,
/// whole. A reload that fails (a bad new file) is not retried until the files change again.
///
/// **Why a poll, not inotify.** A Kubernetes secret volume is replaced by renaming a `..data` symbolic link to a
/// new timestamped directory; `tls.crt` itself is a link through `..data`, so the file a path names changes without
/// any event on that file, and certbot's `live/` links point into another directory again. `stat` follows every
/// link, so any replacement (link swap, rename, rewrite in place) changes what it reports, whatever the layout.
/// The cost is bounded and small: two `stat` calls per interval on a utility queue, no descriptor, no thread, and no
/// inotify instance (those are limited per user, shared by every container of the same user on a node). The
/// latency, up to two intervals, does not matter for certificates renewed weeks before they lapse.
///
/// **Ownership:** Owned by the service, which calls ``cancel()`` when it stops.
///
/// **Thread safety:** Safe from any thread. The timer runs on a queue of its own; `changed` is called there, one
/// call at a time.
final class TLSFileWatcher: @unchecked Sendable {
    // @unchecked Sendable: `timer` is set in init and only cancelled afterwards (DispatchSource is thread-safe);
    // `state` is behind its lock.

    /// What `stat` says of one file: equal before and after means the file was not replaced or rewritten.
    struct Identity: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int
    }

    private struct State {
        /// The files' identities when last loaded (or found bad).
        var loaded: [Identity?]
        /// A change seen at the last check, acted on if the next check sees the same.
        var pending: [Identity?]?
    }

    /// How often the files are checked.
    let interval: Duration
    private let files: [String]
    private let state: LockedState<State>
    private let timer: any DispatchSourceTimer
    private let changed: @Sendable () -> Void

    /// Starts watching `files`, whose current identities are `loaded` (read before the files were, so a change
    /// meanwhile is seen); `changed` is called on the watcher's queue when they have changed and settled.
    init(
        files: [String],
        loaded: [Identity?],
        interval: Duration,
        changed: @escaping @Sendable () -> Void
    ) {
        self.files = files
        self.interval = interval
        state = LockedState(State(loaded: loaded, pending: nil))
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "spout.tls-file-watcher", qos: .utility))
        let nanoseconds = max(
            1,
            Int(interval.components.seconds) * 1_000_000_000
                + Int(interval.components.attoseconds / 1_000_000_000)
        )
        timer.schedule(
            deadline: .now() + .nanoseconds(nanoseconds),
            repeating: .nanoseconds(nanoseconds),
            leeway: .nanoseconds(nanoseconds / 10)
        )
        self.changed = changed
        timer.setEventHandler { [weak self] in self?.check() }
        timer.activate()
    }

    deinit {
        timer.cancel()
    }

    /// Stops watching; no `changed` call starts after it returns (one running may finish).
    func cancel() {
        timer.cancel()
    }

    /// One check (on the timer's queue): calls `changed` when the files differ from what was loaded and are the
    /// same as at the last check.
    private func check() {
        let now = files.map(Self.identity(of:))
        let settled: Bool = state.withLock { state in
            guard now != state.loaded else {
                state.pending = nil
                return false
            }
            guard state.pending == now else {
                state.pending = now
                return false
            }
            state.loaded = now
            state.pending = nil
            return true
        }
        if settled { changed() }
    }

    /// What `stat` says of `path` (following links), nil when it cannot be read.
    static func identity(of path: String) -> Identity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Identity(
            device: UInt64(info.st_dev),
            inode: UInt64(info.st_ino),
            size: Int64(info.st_size),
            modifiedSeconds: info.st_mtim.tv_sec,
            modifiedNanoseconds: info.st_mtim.tv_nsec
        )
    }
}
