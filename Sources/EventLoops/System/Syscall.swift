import Glibc

/// The one wrapper every socket call of the event loops and of the protocols on them goes through.
///
/// It retries `EINTR`, reports `EAGAIN` as ``IOResult/wouldBlock`` and turns every other failure
/// into an ``IOError``.
///
/// **Ownership:** Stateless namespace.
///
/// **Thread safety:** Safe to call from any thread.
public enum Syscall {
    /// Runs `body` (a call returning `-1` on failure) until it does not fail with `EINTR`.
    /// - Throws: ``IOError`` for every failure but `EINTR` and `EAGAIN`.
    @inlinable @inline(__always)
    public static func run(_ call: StaticString, _ body: () -> Int) throws(IOError) -> IOResult<Int> {
        while true {
            let result = body()
            if result >= 0 { return .processed(result) }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            throw IOError(errno: code, call: "\(call)")
        }
    }

    /// Like ``run(_:_:)`` for calls that can never block (`bind`, `setsockopt`, …).
    @inlinable @inline(__always)
    @discardableResult
    public static func blocking(_ call: StaticString, _ body: () -> Int) throws(IOError) -> Int {
        switch try run(call, body) {
        case .processed(let value):
            return value
        case .wouldBlock:
            throw IOError(errno: EAGAIN, call: "\(call)")
        }
    }
}
