import Glibc

/// A failed system call: the `errno` it set and the name of the call.
///
/// **Ownership:** A value; thrown by the syscall wrapper and by ``Server/start(configuration:group:handler:)``.
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
