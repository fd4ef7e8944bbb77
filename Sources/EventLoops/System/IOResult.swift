import Glibc

/// The outcome of a non-blocking system call that did not fail.
package enum IOResult<Value> {
    /// The call completed and returned `Value`.
    case processed(Value)
    /// The call would have blocked (`EAGAIN` / `EWOULDBLOCK`).
    case wouldBlock
}
