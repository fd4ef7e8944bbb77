import Glibc

/// A failed system call: the `errno` it set and the name of the call.
///
/// **Ownership:** A value; thrown by ``Syscall``, ``Socket``, ``EventLoop/register(_:_:interest:)`` and the servers
/// and clients built on them.
///
/// **Thread safety:** Value type; not shared.
public struct IOError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The `errno` value the call left behind.
    public let errno: Int32
    /// The system call that failed, e.g. `"bind"`.
    public let call: String

    /// Creates an error for `call` failing with `errno`.
    public init(errno: Int32, call: String) {
        self.errno = errno
        self.call = call
    }

    public var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

extension IOError {
    /// The process or the system has no descriptor left (`EMFILE`, `ENFILE`).
    public var isOutOfDescriptors: Bool {
        errno == EMFILE || errno == ENFILE
    }

    /// `accept` failed for the one connection it was taking, not for the listener: the peer reset it while it
    /// waited (`ECONNABORTED`), or Linux passed on a network error pending on the new socket (accept(2), "Error
    /// handling"). The next connection may be accepted at once.
    public var isAbortedConnection: Bool {
        switch errno {
        case ECONNABORTED, EPROTO, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETDOWN, ENETUNREACH,
            EPERM:
            return true
        default:
            return false
        }
    }
}
