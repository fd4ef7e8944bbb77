import Foundation

/// Everything an operator can set: where to listen, limits, stream pacing, CORS, shutdown.
///
/// The defaults here are the embedded defaults that `swift run spout` uses with no file; they
/// are the same as `config/spout.json` (a test keeps the two equal). Values are layered:
/// defaults, then the file given by `--config` or `SPOUT_CONFIG`, then `SPOUT_*` environment
/// variables, then flags. See ``load(arguments:environment:)``.
///
/// **Thread safety:** value type; not shared.
public struct SpoutConfiguration: Equatable, Sendable {
    /// The address to bind: `127.0.0.1`, `0.0.0.0`, `::` or `::1`.
    public var host = "127.0.0.1"
    /// The TCP port; 0 picks a free one.
    public var port = 8080
    /// Event-loop queues; 0 means one per core.
    public var eventLoops = 0
    /// The listen backlog, in connections.
    public var backlog = 1024
    /// Connections beyond this get `503` and are closed.
    public var maxConnections = 20_000
    /// Connections kept beyond `maxConnections` on which only `/health`, `/ready` and `/metrics` are served
    /// (one request each), so probes of a full server are answered; 0 for none.
    public var probeConnections = 4
    /// Reverse proxies (CIDR networks) whose `Forwarded` / `X-Forwarded-For` name the client (docs/IDENTITY.md);
    /// empty: every peer is the client.
    public var trustedProxies: [String] = []

    /// Request limits and timeouts.
    public var limits = Limits()
    /// Server-sent events settings.
    public var sse = SSE()
    /// Sequence route limits.
    public var sequences = Sequences()
    /// Cross-origin settings.
    public var cors = CORS()
    /// Graceful shutdown settings.
    public var shutdown = Shutdown()
    /// Logging settings.
    public var log = Log()
    /// The outbound JSON API behind `/articles`, `/users/{id}/profile`, `/dashboard` and `/workflow`.
    public var upstream = Upstream()
    /// `gzip` for JSON responses.
    public var compression = Compression()
    /// Live publish/subscribe channels (`/channels`).
    public var channels = Channels()
    /// HTTPS.
    public var tls = TLS()

    /// Request limits and timeouts.
    public struct Limits: Equatable, Sendable {
        /// The largest request head (request line and headers), in bytes; larger gets `431`.
        public var maxHeaderBytes = 16_384
        /// The most header fields in one request; more gets `431`.
        public var maxHeaderCount = 100
        /// The largest request body, in bytes; larger gets `413`.
        public var maxBodyBytes = 1_048_576
        /// Seconds a client may take to send a request head before it gets `408`.
        public var headReadTimeoutSeconds = 10.0
        /// Seconds a client may take to send a whole request body, however it trickles, before it gets `408`.
        public var bodyReadTimeoutSeconds = 30.0
        /// Seconds an idle keep-alive connection stays open.
        public var idleTimeoutSeconds = 60.0
        /// Seconds a response may wait with the client reading nothing at all before it is cut.
        public var writeStallTimeoutSeconds = 300.0
        /// The kernel send buffer (`SO_SNDBUF`) of a connection streaming a response, in bytes: what a stalled
        /// reader can pin in kernel memory (the kernel books twice this); 0 leaves the kernel's autotuning.
        public var streamSendBufferBytes = 131_072
    }

    /// Server-sent events settings.
    public struct SSE: Equatable, Sendable {
        /// Seconds without output after which a `: keep-alive` comment is sent.
        public var heartbeatSeconds = 15.0
        /// The reconnection delay sent to clients in the first `retry:` line, in milliseconds.
        public var retryMilliseconds = 3_000
    }

    /// Sequence route limits.
    public struct Sequences: Equatable, Sendable {
        /// The largest `count` for a JSON response (streams may be unbounded).
        public var maxCount = 10_000
        /// The largest `start` index (reaching it costs work proportional to it).
        public var maxStart = 100_000
        /// The largest `interval`, in milliseconds.
        public var maxIntervalMilliseconds = 60_000
    }

    /// Cross-origin settings.
    public struct CORS: Equatable, Sendable {
        /// Origins allowed to read responses; `*` allows any.
        public var allowedOrigins = ["*"]
    }

    /// Graceful shutdown settings.
    public struct Shutdown: Equatable, Sendable {
        /// Seconds, once the listener is closed, that open responses get to end (streams get a final frame);
        /// what is still open then is closed.
        public var graceSeconds = 10.0
        /// Seconds between `SIGTERM` and closing the listener. Meanwhile the service accepts and answers as
        /// usual but `/ready` answers `503` (`draining`), so a load balancer takes it out of rotation before
        /// its connections are refused. 5 s covers a Kubernetes endpoint update; `SIGINT` (Ctrl-C) skips it,
        /// so `swift run spout` still stops at once.
        public var delaySeconds = 5.0
    }

    /// Logging settings.
    public struct Log: Equatable, Sendable {
        /// Whether to write one JSON line per request to standard output.
        public var requests = true
        /// The lowest level written; request lines are `info`, so `warn` and `error` silence them too.
        public var level = LogLevel.info
        /// Query parameters whose values the request log writes as `REDACTED` (names compared ignoring case).
        public var redactQueryParameters = ["token", "access_token", "key", "api_key", "password", "secret"]
        /// Whether the demo upstream's requests to the service itself (made while no upstream is configured) are
        /// logged and counted in the request metrics like client requests.
        public var selfCalls = false
    }

    /// The outbound JSON API (the JSONPlaceholder shape) and how Spout calls it.
    public struct Upstream: Equatable, Sendable {
        /// The API's base URL, e.g. `https://jsonplaceholder.typicode.com`. Empty means Spout's own
        /// demo data, served at `/demo` and fetched over loopback so the real client path still runs.
        public var baseURL = ""
        /// Attempts per upstream request, the first included (idempotent requests only).
        public var attempts = 3
        /// The backoff before the first retry, in milliseconds; it doubles each retry, with full jitter.
        public var baseDelayMilliseconds = 100
        /// The longest backoff between two attempts, in milliseconds (an upstream's `Retry-After` is waited in
        /// full, within the deadline).
        public var maxDelayMilliseconds = 2_000
        /// Seconds one attempt may take before it counts as a timeout.
        public var attemptTimeoutSeconds = 5.0
        /// Seconds a whole upstream request may take, retries and backoff included.
        public var deadlineSeconds = 10.0
        /// Seconds a cached response stays fresh.
        public var cacheTTLSeconds = 30.0
        /// Cached responses kept at most; the least recently used goes first.
        public var cacheMaxEntries = 1_000
        /// Bytes of cached response bodies kept at most; the least recently used go first, and a body
        /// larger than this on its own is not cached.
        public var cacheMaxBytes = 64 * 1024 * 1024
        /// Seconds after expiry during which a cached response is still served while one refresh runs
        /// in the background (stale-while-revalidate); 0 turns it off.
        public var cacheStaleSeconds = 0.0
        /// Articles fetched per upstream page by `/articles/stream`.
        public var pageSize = 10
        /// Bytes of one upstream response body read at most (declared by `Content-Length` or received);
        /// a larger one is cut off and answered `502`.
        public var maxBodyBytes = 4 * 1024 * 1024
    }

    /// `gzip` for complete JSON responses (never for SSE or NDJSON streams).
    public struct Compression: Equatable, Sendable {
        /// Whether JSON bodies are sent `gzip`-coded to clients whose `Accept-Encoding` prefers it.
        public var enabled = true
        /// Bodies smaller than this many bytes go out uncoded: below about a packet, gzip saves nothing.
        public var minimumBytes = 1_024
    }

    /// Live channels: history kept for resuming, limits, what a slow subscriber may hold, and who may publish.
    public struct Channels: Equatable, Sendable {
        /// Channels that may exist at once; creating one more (by publishing or subscribing) gets `503`.
        public var maxChannels = 10_000
        /// Events each channel keeps for `Last-Event-ID` resumption, at most.
        public var historyEvents = 1_000
        /// Bytes of events each channel keeps, at most (the oldest go first).
        public var historyBytes = 1_048_576
        /// Seconds an event stays in the history.
        public var historySeconds = 3_600.0
        /// The largest `data` of one event, in bytes of compact JSON (`413` beyond).
        public var maxEventBytes = 65_536
        /// Subscribers one channel may have at once (`503` beyond).
        public var maxSubscribersPerChannel = 10_000
        /// Channels and patterns one `GET /subscribe` may name (`400` beyond), and channels it follows at once.
        public var maxChannelsPerSubscription = 100
        /// Seconds within which a streaming connection (a subscriber) whose peer vanished without a FIN is
        /// noticed and closed (TCP keepalive and `TCP_USER_TIMEOUT` on its socket), so it leaves its channels'
        /// presence; 0 leaves the kernel's defaults.
        public var deadPeerSeconds = 30
        /// Over Redis: seconds after its last heartbeat (each replica refreshes its own every second) that a
        /// replica is taken as gone, and its subscribers leave the shared presence (`leave` frames on the other
        /// replicas, counts without them). The bound for a replica killed, or cut off Redis, is about this plus a
        /// second.
        public var replicaTimeoutSeconds = 10
        /// Live events one subscriber may have waiting for its socket; past this its overflow policy applies.
        public var subscriberBufferEvents = 1_024
        /// Bytes of live events one subscriber may have waiting; past this its overflow policy applies.
        public var subscriberBufferBytes = 1_048_576
        /// What happens to a subscriber that falls past its buffer: `disconnect` ends its stream (it resumes
        /// from the history with `Last-Event-ID`); `drop-oldest` drops its oldest waiting events and sends an
        /// `event: gap` saying how many.
        public var overflow = Overflow.disconnect
        /// Bearer tokens that may publish; empty means only loopback clients may.
        public var publishTokens: [String] = []
        /// Bearer tokens that may subscribe (header, or `?token=` for `EventSource`); empty means anyone may.
        public var subscribeTokens: [String] = []
        /// `redis://[user:password@]host[:port][/db]` (or `rediss://…` for TLS): channels are shared through this
        /// Redis (history, ids and fan-out across every replica that names it); empty keeps them in this process.
        public var redisURL = ""
        /// A PEM file of the CAs a `rediss://` server's certificate must chain to; empty: the system's CA store.
        public var redisTLSCAFile = ""
        /// A PEM client certificate chain to present to a `rediss://` server that asks for one; empty: none.
        public var redisTLSCertificateFile = ""
        /// The PEM private key of ``redisTLSCertificateFile``; set exactly when it is.
        public var redisTLSPrivateKeyFile = ""
        /// Whether `/ready` fails while Redis is unreachable (`fail`) or only says so in its body (`report`).
        public var redisReadiness = RedisReadiness.report
        /// The prefix of every key (and pub/sub channel) Spout uses in Redis, so deployments can share one.
        public var redisKeyPrefix = "spout:"
        /// Seconds a publish's `Idempotency-Key` is remembered after its `202`: a retry with the key within this
        /// window gets the same ids and publishes nothing (in process in this process's memory, over Redis in Redis).
        public var idempotencyWindowSeconds = 86_400.0
        /// `Idempotency-Key`s a process holds at once (remembered in process, or in flight over Redis); a publish
        /// with a new key beyond this gets `503`.
        public var idempotencyMaxKeys = 100_000
        /// Events a client (JWT subject, static token, or address) may publish per minute on average; 0: no limit.
        public var publishRatePerMinute = 0
        /// Publishes a client may make at once, after being idle (the token bucket's size).
        public var publishBurst = 60
        /// Subscription streams one client (JWT subject, static token, or address) may have open at once (`429`
        /// beyond); 0: no limit.
        public var maxSubscriptionsPerSubject = 0
        /// Signed tokens (JWT) with per-channel rights; off while no key source is set (docs/IDENTITY.md).
        public var jwt = JWT()
    }

    /// `channels.jwt`: where the keys of signed tokens come from, and what is checked besides their signatures.
    public struct JWT: Equatable, Sendable {
        /// A JWK Set file (RFC 7517 §5) of the keys that verify tokens; empty: no JWT.
        public var jwksFile = ""
        /// An `http`/`https` URL serving a JWK Set, fetched off the event loops and refreshed; empty: none. Its keys
        /// join the file's.
        public var jwksURL = ""
        /// Seconds between refreshes of ``jwksURL``'s set.
        public var jwksRefreshSeconds = 300.0
        /// Seconds at least between two refreshes asked for by tokens with an unknown `kid`.
        public var jwksMinRefreshSeconds = 30.0
        /// Seconds of clock skew forgiven on `exp`, `nbf` and `iat`.
        public var leewaySeconds = 30.0
        /// The `iss` every token must carry; empty: any.
        public var issuer = ""
        /// A value every token's `aud` must hold; empty: any.
        public var audience = ""
        /// A cookie that may carry the token of a subscription (`EventSource` with `withCredentials`); empty: none.
        public var cookieName = ""
        /// Verified tokens remembered, so that a reconnection costs no signature check.
        public var cacheEntries = 10_000

        /// Whether signed tokens are on: a key source is set.
        public var isEnabled: Bool { !jwksFile.isEmpty || !jwksURL.isEmpty }
    }

    /// HTTPS, served by Spout itself through the system's OpenSSL 3 (docs/TLS.md).
    public struct TLS: Equatable, Sendable {
        /// The PEM certificate chain (the leaf first, then its intermediates); empty: no HTTPS.
        public var certificateFile = ""
        /// The PEM private key of the chain's leaf; set exactly when ``certificateFile`` is.
        public var privateKeyFile = ""
        /// The HTTPS port beside the plain HTTP one on `port`; 0: `port` itself serves HTTPS (and no plain HTTP).
        public var port = 0
        /// A DER OCSP response for the certificate, stapled for clients that ask (`status_request`) and reloaded
        /// with the certificate; empty: no stapling.
        public var ocspResponseFile = ""

        /// Whether HTTPS is configured.
        public var isEnabled: Bool { !certificateFile.isEmpty }
    }

    /// The embedded defaults.
    public init() {}
}

extension SpoutConfiguration.Channels {
    /// What happens to a subscriber past its buffer (`channels.overflow`).
    public enum Overflow: String, Sendable, CaseIterable, ConfigChoice {
        /// End its stream with `event: end` `{"reason":"overflow"}`; it resumes from the history.
        case disconnect
        /// Drop its oldest waiting events and send `event: gap` saying how many.
        case dropOldest = "drop-oldest"
    }

    /// Whether `/ready` fails while Redis is unreachable (`channels.redisReadiness`).
    public enum RedisReadiness: String, Sendable, CaseIterable, ConfigChoice {
        /// `/ready` stays `200` and names Redis's state in its body.
        case report
        /// `/ready` answers `503` (`"reason":"redis"`) while Redis is not connected.
        case fail
    }
}
