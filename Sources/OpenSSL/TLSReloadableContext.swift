import Glibc

/// The server's ``TLSContext`` of the moment, reloaded from the same files on demand (on `SIGHUP`, when the files
/// change as cert-manager rotates them).
///
/// ``reload()`` makes a new context from the files; when they are good it becomes ``current`` and new connections
/// use it, while open connections keep the context their engine was made from. When they are bad (missing, not PEM,
/// a key that does not match, half-written), the old context stays and the error says why, for the log.
///
///     let tls = try TLSReloadableContext(TLSServerConfiguration(certificateFile: crt, privateKeyFile: key))
///     let engine = try tls.current.makeServerEngine()   // per accepted connection
///     switch tls.reload() { case .success: log("reloaded"); case .failure(let error): log("kept the old: \(error)") }
///
/// **Blocking.** ``init(_:)`` and ``reload()`` read files: call them off the event loops. ``current`` does not block
/// beyond a short lock.
///
/// **Ownership:** Owned by the service; the contexts it hands out are shared with the engines made from them.
///
/// **Thread safety:** Safe from any thread. ``reload()`` calls are serialized; ``current`` may be read meanwhile and
/// returns the old context until the new one is in place.
public final class TLSReloadableContext: @unchecked Sendable {
    // @unchecked Sendable: `context` is read and replaced only under `lock`; `reloading` serializes reloads.

    /// The files the contexts are made from.
    public let configuration: TLSServerConfiguration
    private let lock: UnsafeMutablePointer<pthread_mutex_t>
    private let reloading: UnsafeMutablePointer<pthread_mutex_t>
    private var context: TLSContext

    /// Makes the first context. A service refuses to start when this throws.
    public init(_ configuration: TLSServerConfiguration) throws(TLSError) {
        self.configuration = configuration
        context = try TLSContext(server: configuration)
        lock = Self.makeMutex()
        reloading = Self.makeMutex()
    }

    deinit {
        for mutex in [lock, reloading] {
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
            mutex.deallocate()
        }
    }

    /// The context for a connection that starts now.
    public var current: TLSContext {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return context
    }

    /// Makes a new context from ``configuration``'s files. On success it becomes ``current`` and is returned; on
    /// failure ``current`` stays as it was and the error says which file is wrong and why.
    @discardableResult
    public func reload() -> Result<TLSContext, TLSError> {
        pthread_mutex_lock(reloading)
        defer { pthread_mutex_unlock(reloading) }
        let fresh: TLSContext
        do {
            fresh = try TLSContext(server: configuration)
        } catch {
            return .failure(error)
        }
        pthread_mutex_lock(lock)
        let old = context
        context = fresh
        pthread_mutex_unlock(lock)
        _ = old  // released here, outside the lock (the engines made from it keep it alive)
        return .success(fresh)
    }

    private static func makeMutex() -> UnsafeMutablePointer<pthread_mutex_t> {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        return mutex
    }
}
