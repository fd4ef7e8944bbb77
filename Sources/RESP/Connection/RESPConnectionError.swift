/// Why a command sent through ``RESPConnectionStateMachine`` got no reply, or why the connection was closed.
///
/// An error *reply* from the server (`-ERR …`) is not one of these: it is a reply like any other, delivered as a
/// ``RESPValue/error(_:)`` value. These are the failures of the connection itself; a command failed with one of them
/// may or may not have been executed by the server.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public enum RESPConnectionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The command was sent while the machine waits to reconnect; nothing was written.
    case notConnected
    /// The machine was closed by its owner, or gave up reconnecting.
    case closed
    /// The socket failed or the server closed it; the text is the owner's description of why.
    case connectionLost(String)
    /// Connecting and the handshake together took longer than the limit.
    case connectTimedOut(limit: Duration)
    /// The oldest command waiting for its reply got none within its timeout (counted from when it was sent or
    /// when the reply before it arrived, whichever is later).
    case timedOut(limit: Duration)
    /// The server refused a handshake command (`HELLO`, `AUTH`, `CLIENT SETNAME`, `SELECT`, or restoring a
    /// subscription); the message is the server's.
    case handshakeFailed(command: String, message: String)
    /// The server's bytes are not valid RESP.
    case protocolViolation(RESPParseError)
    /// A reply arrived that no command was waiting for, or of a shape the waiting command cannot take.
    case unexpectedReply(String)
    /// More commands are waiting (written or queued) than the limit; this one was not sent.
    case tooManyPendingCommands(limit: Int)

    /// A short lowercase message saying what went wrong.
    public var description: String {
        switch self {
        case .notConnected:
            return "not connected to redis; reconnecting"
        case .closed:
            return "the redis connection is closed"
        case .connectionLost(let reason):
            return "redis connection lost: \(reason)"
        case .connectTimedOut(let limit):
            return "redis connection and handshake took longer than \(limit)"
        case .timedOut(let limit):
            return "redis did not reply within \(limit)"
        case .handshakeFailed(let command, let message):
            return "redis refused \(command): \(message)"
        case .protocolViolation(let error):
            return "redis sent invalid resp: \(error)"
        case .unexpectedReply(let reply):
            return "redis sent a reply no command was waiting for: \(reply)"
        case .tooManyPendingCommands(let limit):
            return "more than \(limit) redis commands are waiting"
        }
    }
}
