extension ConfigKey {
    /// One line per key for `--help` and docs/CONFIGURATION.md: what it sets. A key without a line here fails a test.
    static let descriptions: [String: String] = [
        "host": "bind address (0.0.0.0, ::, ::1 work)",
        "port": "TCP port; 0 picks a free one",
        "eventLoops": "serial event-loop queues; 0 = one per CPU the container may use (cgroup quota)",
        "backlog": "listen backlog",
        "maxConnections": "connections beyond this get 503 and are closed",
        "probeConnections": "connections kept beyond maxConnections for /health, /ready and /metrics only",
        "trustedProxies":
            "proxies (CIDR) whose Forwarded/X-Forwarded-For name the client; empty: the peer is the client",
        "limits.maxHeaderBytes": "largest request head (431 beyond)",
        "limits.maxHeaderCount": "most header fields (431 beyond)",
        "limits.maxBodyBytes": "largest request body (413 beyond)",
        "limits.headReadTimeoutSeconds": "time to send a request head (408 after; slowloris guard)",
        "limits.bodyReadTimeoutSeconds": "total time to send a request body, however steadily it trickles (408 after)",
        "limits.idleTimeoutSeconds": "idle keep-alive connections are closed after this",
        "limits.writeStallTimeoutSeconds": "a reader that takes nothing at all for this long is cut",
        "limits.streamSendBufferBytes": "kernel send buffer of a streaming connection (SO_SNDBUF); 0 = autotuned",
        "sse.heartbeatSeconds": "keep-alive comment after this long without output",
        "sse.retryMilliseconds": "the retry: sent to EventSource",
        "sequences.maxCount": "largest count for JSON",
        "sequences.maxStart": "largest start",
        "sequences.maxIntervalMilliseconds": "largest interval",
        "cors.allowedOrigins": "origins allowed to read responses (* = any)",
        "shutdown.graceSeconds": "time streams get to end once the server stops accepting",
        "shutdown.delaySeconds": "after SIGTERM, keep serving this long with /ready at 503 before closing the listener",
        "log.requests": "one JSON line per request on stdout",
        "log.level": "lowest level written: debug, info (request lines), warn or error",
        "log.redactQueryParameters": "query parameters whose values the request log replaces (any case)",
        "log.selfCalls": "log and count the demo upstream's calls to the service itself like client requests",
        "upstream.baseURL": "the JSONPlaceholder-shaped API; empty = the built-in demo under /demo",
        "upstream.maxBodyBytes": "largest upstream response body (502 beyond, the transfer cut off)",
        "upstream.attempts": "attempts per upstream GET, the first included",
        "upstream.baseDelayMilliseconds": "backoff before the first retry (doubling, full jitter)",
        "upstream.maxDelayMilliseconds": "cap of the backoff (an upstream's Retry-After is waited in full)",
        "upstream.attemptTimeoutSeconds": "one upstream attempt",
        "upstream.deadlineSeconds": "the whole upstream call, retries and waits included",
        "upstream.cacheTTLSeconds": "response cache freshness",
        "upstream.cacheMaxEntries": "cached responses kept at most (LRU)",
        "upstream.cacheMaxBytes": "bytes of cached bodies kept at most (LRU); a larger body is not cached",
        "upstream.cacheStaleSeconds": "serve an expired entry this long while one refresh runs; 0 = off",
        "upstream.pageSize": "articles per upstream page for /articles/stream",
        "compression.enabled": "gzip for complete JSON bodies when the client prefers it (never for streams)",
        "compression.minimumBytes": "smaller JSON bodies go out uncoded (unless the client refuses an uncoded one)",
        "channels.maxChannels": "channels that may exist at once (503 beyond)",
        "channels.historyEvents": "events each channel keeps for Last-Event-ID resumption",
        "channels.historyBytes": "bytes of events each channel keeps",
        "channels.historySeconds": "how long an event stays in a channel's history",
        "channels.maxEventBytes": "largest event data, compact JSON bytes (413 beyond)",
        "channels.maxSubscribersPerChannel": "subscribers one channel may have (503 beyond)",
        "channels.maxChannelsPerSubscription":
            "channels and patterns one GET /subscribe may name (400 beyond), and channels it follows at once",
        "channels.deadPeerSeconds":
            "a streaming connection whose peer vanished without a FIN is closed within this (keepalive, TCP_USER_TIMEOUT)",
        "channels.replicaTimeoutSeconds":
            "over Redis: a replica whose heartbeat is this old is gone, and its subscribers leave the shared presence",
        "channels.subscriberBufferEvents": "live events a subscriber may have unsent before channels.overflow applies",
        "channels.subscriberBufferBytes": "bytes of live events a subscriber may have unsent before channels.overflow",
        "channels.overflow": "a subscriber past its buffer: disconnect (it resumes from history) or drop-oldest (gap)",
        "channels.publishTokens": "Bearer tokens that may publish and list channels; empty: loopback clients only",
        "channels.redisURL":
            "redis[s]://[user:password@]host[:port][/db]: share channels across replicas (rediss: TLS); empty: in-process",
        "channels.redisReadiness":
            "report (/ready stays 200, says Redis's state) or fail (/ready 503 while Redis is down)",
        "channels.redisTLSCAFile": "PEM CAs to verify a rediss:// server with; empty: the system's CA store",
        "channels.redisTLSCertificateFile": "PEM client certificate chain for a rediss:// server that asks for one",
        "channels.redisTLSPrivateKeyFile": "PEM private key of channels.redisTLSCertificateFile",
        "channels.redisKeyPrefix": "prefix of every Redis key and pub/sub channel Spout uses",
        "channels.subscribeTokens": "Bearer tokens that may subscribe and read /latest (or ?token=); empty: anyone",
        "channels.idempotencyWindowSeconds": "how long a publish's Idempotency-Key is remembered (a retry: same ids)",
        "channels.idempotencyMaxKeys": "Idempotency-Keys held at once in process (503 for a new key beyond)",
        "channels.publishRatePerMinute":
            "events a client (JWT sub, static token, address) may publish per minute; 0: no limit",
        "channels.publishBurst": "publishes a client may make at once after being idle (429 beyond the rate)",
        "channels.maxSubscriptionsPerSubject":
            "subscription streams one client (JWT sub, static token, address) may have open; 0: no limit",
        "channels.jwt.jwksFile": "JWK Set file of the keys that verify signed tokens (JWT); empty: no JWT",
        "channels.jwt.jwksURL": "URL of a JWK Set, fetched off the event loops, refreshed; its keys join the file's",
        "channels.jwt.jwksRefreshSeconds": "seconds between refreshes of channels.jwt.jwksURL",
        "channels.jwt.jwksMinRefreshSeconds": "seconds at least between refreshes asked for by an unknown kid",
        "channels.jwt.leewaySeconds": "clock skew forgiven on a token's exp, nbf and iat",
        "channels.jwt.issuer": "the iss every token must carry; empty: any",
        "channels.jwt.audience": "a value every token's aud must hold; empty: any",
        "channels.jwt.cookieName": "cookie that may carry a subscription's token (EventSource withCredentials)",
        "channels.jwt.cacheEntries": "verified tokens remembered (a reconnection costs no signature check)",
        "tls.certificateFile": "PEM certificate chain (leaf first) to serve HTTPS; reloaded on SIGHUP; empty: no HTTPS",
        "tls.privateKeyFile": "PEM private key of the certificate; set exactly when tls.certificateFile is",
        "tls.port": "HTTPS port beside plain HTTP on port; 0: port itself serves HTTPS only",
        "tls.ocspResponseFile": "DER OCSP response stapled for clients that ask; reloaded with the certificate",
    ]

    /// Every key, two lines each: the key, its environment variable (and flag), its values and default; then
    /// what it sets.
    static func helpTable() -> String {
        var text = ""
        for key in all {
            var variable = key.environmentName
            if let alias = key.alias { variable += " or \(alias)" }
            if SpoutConfiguration.hasFlag(for: key.name) {
                variable += ", --\(SpoutConfiguration.flagName(for: key.name))"
            }
            text += "  \(key.name)  (\(variable))  \(key.typeText), default \(key.defaultText)\n"
            text += "      \(descriptions[key.name] ?? "")\n"
        }
        return text
    }
}
