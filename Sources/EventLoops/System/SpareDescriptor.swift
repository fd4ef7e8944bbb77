import Glibc

/// One descriptor held open on `/dev/null` so the server can still take a connection off its listener when the
/// process has run out of descriptors (`EMFILE`, `ENFILE`), and answer it `503` instead of leaving it in the
/// backlog with no bytes.
///
/// The accept loop closes the spare, accepts into the slot it freed (the kernel hands out the lowest free
/// number), answers and closes the connection, then opens the spare again. If the slot was taken in between
/// (another thread opened a file), the spare stays closed and the loop backs off until it can be reopened.
///
/// **Ownership:** Owned by a server's accept loop (HTTPServer's `Server`); closed when the server stops.
///
/// **Thread safety:** Confined to the accept loop's queue.
public struct SpareDescriptor {
    /// The open descriptor, or nil while it is released. // Accept-loop-confined.
    public private(set) var descriptor: Int32?

    /// Creates a spare that holds nothing until ``reopen()``.
    public init() {}

    /// Whether the spare is held.
    public var isHeld: Bool { descriptor != nil }

    /// Opens the spare if it is not held. - Returns: Whether it is held now.
    @discardableResult
    public mutating func reopen() -> Bool {
        if descriptor != nil { return true }
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        descriptor = fd
        return true
    }

    /// Closes the spare, freeing its slot. - Returns: Whether a spare was held (and so a slot was freed).
    public mutating func release() -> Bool {
        guard let fd = descriptor else { return false }
        descriptor = nil
        Glibc.close(fd)
        return true
    }
}
