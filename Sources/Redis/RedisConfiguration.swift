import OpenSSL
import RESP

/// Where a ``RedisConnection`` connects and the limits it keeps.
///
/// ``init(url:clientName:commandTimeout:connectTimeout:pingInterval:maxPendingCommands:maxReplyBytes:maxOutboundBytes:reconnect:tls:)``
/// takes the host, port, user, password and database from a `redis://` or `rediss://` URL; the rest are limits,
/// each documented with its default, and the TLS context a `rediss://` URL needs.
///
/// **Ownership:** A value; copied into the connection.
/// **Thread safety:** Value type; not shared.
public struct RedisConfiguration: Sendable, Equatable {
    /// Host, port, user, password and database. A numeric host (`127.0.0.1`, `::1`) is connected to directly; a
    /// host name is resolved with `getaddrinfo` off the event loop before each attempt.
    public var url: RedisURL
    /// A name for `CLIENT LIST`; nil sets none.
    public var clientName: String?
    /// How long the oldest command waiting may wait for its reply (counted from when it was written or from the
    /// reply before it) before the connection is deemed dead; nil waits forever. Default 5 s. Blocking reads add
    /// their blocking time to it (``RedisConnection/xread(_:count:block:)``).
    public var commandTimeout: Duration?
    /// The limit on opening the socket plus the whole handshake (the TLS handshake for `rediss://`, then `HELLO`,
    /// `AUTH`, `SELECT`, restored subscriptions): a server that stalls any of it is given up and retried. Default
    /// 5 s.
    public var connectTimeout: Duration
    /// How long a ready connection with nothing outstanding stays silent before it sends `PING`; nil never pings.
    /// Default 15 s.
    public var pingInterval: Duration?
    /// The most commands waiting at once, written or queued while connecting; one more fails at once with
    /// ``RedisError/connection(_:)`` holding `tooManyPendingCommands`. Default 10,000.
    public var maxPendingCommands: Int
    /// The most bytes one reply (or push) may hold, as the parser counts them (wire bytes plus the memory of the
    /// elements parsed so far); a larger one closes the connection with a protocol violation, so a hostile or
    /// broken server cannot grow the client's memory without bound. It caps a single bulk string too. Default
    /// 64 MiB; at least 1 KiB.
    public var maxReplyBytes: Int
    /// The most bytes of written commands the server has not taken yet (held by the client, beyond what the
    /// kernel's socket buffer holds); a command sent with more waiting fails at once with
    /// ``RedisError/writeBufferFull(limit:)``, so a server that stops reading cannot grow the client's memory
    /// without bound. Default 64 MiB; at least 64 KiB.
    public var maxOutboundBytes: Int
    /// When to reconnect after a failure: exponential backoff with jitter. Default ``defaultReconnect``.
    public var reconnect: RESPReconnectPolicy
    /// The client-side TLS context for a `rediss://` URL (``RedisURL/usesTLS``): the CAs the server's certificate
    /// must chain to and an optional client certificate (``TLSContext/init(client:)``; making one reads files, so
    /// make it at start-up). Each connection attempt makes a ``TLSEngine`` from it for the URL's host (sent as SNI
    /// unless it is an address, and checked against the certificate). Ignored for `redis://`. A `rediss://` URL
    /// without one fails every attempt with a message that says so. Default nil; compared by identity.
    public var tls: TLSContext?
    /// Whether a server without RESP3 (Redis before 6) is refused with an error that says so, rather than spoken
    /// to in RESP2 (see ``RESPConnectionStateMachine/Configuration/requiresRESP3``). Default false.
    public var requiresRESP3 = false

    /// Exponential backoff with full jitter: the n-th consecutive failure waits a uniform time in (0, base], the
    /// base starting at 100 ms, doubling, at most 10 s; forever. Replicas that lost Redis together come back spread
    /// over the whole interval.
    public static let defaultReconnect = RESPReconnectPolicy(
        initialDelay: .milliseconds(100),
        maxDelay: .seconds(10),
        multiplier: 2,
        jitter: 1
    )

    /// Creates a configuration for the server `url` names.
    public init(
        url: RedisURL,
        clientName: String? = nil,
        commandTimeout: Duration? = .seconds(5),
        connectTimeout: Duration = .seconds(5),
        pingInterval: Duration? = .seconds(15),
        maxPendingCommands: Int = 10_000,
        maxReplyBytes: Int = 64 << 20,
        maxOutboundBytes: Int = 64 << 20,
        reconnect: RESPReconnectPolicy = RedisConfiguration.defaultReconnect,
        tls: TLSContext? = nil
    ) {
        self.tls = tls
        self.url = url
        self.clientName = clientName
        self.commandTimeout = commandTimeout
        self.connectTimeout = connectTimeout
        self.pingInterval = pingInterval
        self.maxPendingCommands = max(1, maxPendingCommands)
        self.maxReplyBytes = max(1024, maxReplyBytes)
        self.maxOutboundBytes = max(64 << 10, maxOutboundBytes)
        self.reconnect = reconnect
    }

    /// The state machine's configuration: the URL's login, these timeouts, and parser limits from
    /// ``maxReplyBytes``.
    var machineConfiguration: RESPConnectionStateMachine<RedisRequest>.Configuration {
        let maxReplyBytes = max(1024, maxReplyBytes)
        return RESPConnectionStateMachine<RedisRequest>.Configuration(
            url: url,
            clientName: clientName,
            commandTimeout: commandTimeout,
            connectTimeout: connectTimeout,
            pingInterval: pingInterval,
            maxPendingCommands: maxPendingCommands,
            reconnect: reconnect,
            parser: RESPParser.Configuration(
                maxBulkBytes: maxReplyBytes,
                maxLineBytes: min(64 << 10, maxReplyBytes),
                maxBufferedBytes: maxReplyBytes
            ),
            requiresRESP3: requiresRESP3
        )
    }
}
