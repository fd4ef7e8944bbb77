import RESP

/// Why a command sent through a ``RedisConnection`` did not succeed.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public enum RedisError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The connection failed the command without a reply: not connected (the client is waiting to reconnect; the
    /// command was not written), closed, lost, timed out, a protocol violation, too many commands waiting. A
    /// command failed this way after it was written may or may not have been executed.
    case connection(RESPConnectionError)
    /// The server answered with an error reply (`-ERR …`, `-WRONGTYPE …`); the message is the server's.
    case server(String)
    /// More than this many bytes of written commands wait for the server to read them
    /// (``RedisConfiguration/maxOutboundBytes``); the command was not sent.
    case writeBufferFull(limit: Int)
    /// The server answered with a reply of a shape the typed call cannot read (e.g. `XADD` answering an integer).
    case unexpectedReply(String)

    /// A short lowercase message saying what went wrong.
    public var description: String {
        switch self {
        case .connection(let error):
            return error.description
        case .server(let message):
            return "redis answered with an error: \(message)"
        case .writeBufferFull(let limit):
            return "more than \(limit) bytes of commands wait for redis to read them"
        case .unexpectedReply(let reply):
            return "redis answered with an unexpected reply: \(reply)"
        }
    }

    /// Whether the command was certainly not executed because the client is not connected: fail fast, retry later.
    public var isNotConnected: Bool {
        switch self {
        case .connection(.notConnected), .connection(.closed):
            return true
        default:
            return false
        }
    }
}
