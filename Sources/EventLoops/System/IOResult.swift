/// The outcome of a non-blocking system call that did not fail (``Syscall/run(_:_:)``, ``Socket/read(_:into:)``,
/// ``Socket/send(_:_:)``, ``Socket/accept(_:)``).
///
/// **Thread safety:** Value type.
public enum IOResult<Value> {
    /// The call completed and returned `Value`.
    case processed(Value)
    /// The call would have blocked (`EAGAIN` / `EWOULDBLOCK`).
    case wouldBlock
}
