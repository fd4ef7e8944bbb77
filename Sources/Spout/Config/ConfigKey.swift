import Foundation
import RESP

/// One configuration key: its dotted name, its environment variable, and how to parse and store it.
///
/// The table ``all`` is the one list of keys: loading, the environment names, `--help` and the checks on the
/// shipped file all come from it. A new key is one line there and one description in ``descriptions``.
///
/// **Thread safety:** immutable; shared freely. Audited for `@unchecked Sendable`: it holds only
/// strings, ranges and key paths to stored properties of a value type, none of which carry state.
struct ConfigKey: @unchecked Sendable {
    /// The dotted path in the JSON file, e.g. `sse.heartbeatSeconds`.
    let name: String
    private let kind: Kind

    private enum Kind {
        case integer(WritableKeyPath<SpoutConfiguration, Int>, ClosedRange<Int>)
        case seconds(WritableKeyPath<SpoutConfiguration, Double>, ClosedRange<Double>)
        case string(WritableKeyPath<SpoutConfiguration, String>, allowed: [String]?)
        /// A string that may be empty (empty: "not set"), stored as given; `what` names it in `--help` (a file's
        /// path is read, and judged, when the service starts).
        case text(WritableKeyPath<SpoutConfiguration, String>, what: String = "string")
        /// A list, maybe empty, of CIDR networks or addresses (``TrustedProxies``).
        case networks(WritableKeyPath<SpoutConfiguration, [String]>)
        case boolean(WritableKeyPath<SpoutConfiguration, Bool>)
        /// A non-empty list of non-empty strings.
        case strings(WritableKeyPath<SpoutConfiguration, [String]>)
        /// A list of non-empty strings that may be empty.
        case names(WritableKeyPath<SpoutConfiguration, [String]>)
        /// An absolute `http`/`https` URL with a host, or empty for "not set"; `use` says what else it may hold.
        case url(WritableKeyPath<SpoutConfiguration, String>, use: URLUse = .upstreamBase)
        /// A `redis://` URL (``RedisURL``), or empty for "not set".
        case redisURL(WritableKeyPath<SpoutConfiguration, String>)
        /// `debug`, `info`, `warn` or `error`.
        case level(WritableKeyPath<SpoutConfiguration, LogLevel>)
        /// One of an enum's raw values (``ConfigChoice``): `channels.overflow`, `channels.redisReadiness`.
        case choice(Choice)
    }

    /// What a URL key is for, which decides what it may hold and what its error says.
    enum URLUse {
        /// `upstream.baseURL`: a base the API paths are appended to, so no query; empty serves the demo data.
        case upstreamBase
        /// `channels.jwt.jwksURL`: a JWK Set document fetched as it is, so a query is allowed (a key service may
        /// want one, `?tenant=…`); a fragment, which is never sent, is not.
        case jwks
    }

    /// A key whose value is one case of a ``ConfigChoice`` enum, reached through closures because `Kind` cannot
    /// be generic over the enum.
    private struct Choice {
        /// The raw values, in declaration order.
        let allowed: [String]
        /// Stores the case whose raw value is the text; `false` if none is.
        let store: (inout SpoutConfiguration, String) -> Bool
        /// The raw value of the stored case.
        let text: (SpoutConfiguration) -> String

        init<Value: ConfigChoice>(_ path: WritableKeyPath<SpoutConfiguration, Value>) {
            allowed = Value.allCases.map(\.rawValue)
            store = { configuration, text in
                guard let value = Value(rawValue: text) else { return false }
                configuration[keyPath: path] = value
                return true
            }
            text = { $0[keyPath: path].rawValue }
        }
    }

    /// A second environment variable accepted for this key (the shorter name an issue or a
    /// convention asks for), e.g. `SPOUT_UPSTREAM_URL`; the canonical name wins if both are set.
    let alias: String?

    /// One row of ``all``: the key's dotted name, its kind, and the second environment variable, if any.
    private init(_ name: String, _ kind: Kind, alias: String? = nil) {
        self.name = name
        self.kind = kind
        self.alias = alias
    }

    /// `SPOUT_` and the dotted name in upper snake case: `sse.heartbeatSeconds` →
    /// `SPOUT_SSE_HEARTBEAT_SECONDS`, `upstream.cacheTTLSeconds` → `SPOUT_UPSTREAM_CACHE_TTL_SECONDS`.
    var environmentName: String {
        var result = "SPOUT_"
        let characters = Array(name)
        for (offset, character) in characters.enumerated() {
            if character == "." {
                result.append("_")
                continue
            }
            if character.isUppercase, offset > 0 {
                let previous = characters[offset - 1]
                let next = offset + 1 < characters.count ? characters[offset + 1] : nil
                // A word starts at a lower→upper step, or at the last capital of an acronym
                // followed by a lowercase letter ("TTLSeconds" → "TTL_SECONDS").
                if previous.isLowercase || (previous.isUppercase && next?.isLowercase == true) {
                    result.append("_")
                }
            }
            result.append(contentsOf: character.uppercased())
        }
        return result
    }

    static let all: [ConfigKey] = [
        ConfigKey("host", .string(\.host, allowed: nil)),
        ConfigKey("port", .integer(\.port, 0...65_535)),
        ConfigKey("eventLoops", .integer(\.eventLoops, 0...256)),
        ConfigKey("backlog", .integer(\.backlog, 1...65_535)),
        ConfigKey("maxConnections", .integer(\.maxConnections, 1...1_000_000)),
        ConfigKey("probeConnections", .integer(\.probeConnections, 0...1_000)),
        ConfigKey("trustedProxies", .networks(\.trustedProxies)),
        ConfigKey("limits.maxHeaderBytes", .integer(\.limits.maxHeaderBytes, 256...1_048_576)),
        ConfigKey("limits.maxHeaderCount", .integer(\.limits.maxHeaderCount, 1...10_000)),
        ConfigKey("limits.maxBodyBytes", .integer(\.limits.maxBodyBytes, 0...1_073_741_824)),
        ConfigKey("limits.headReadTimeoutSeconds", .seconds(\.limits.headReadTimeoutSeconds, 0.001...3_600)),
        ConfigKey("limits.bodyReadTimeoutSeconds", .seconds(\.limits.bodyReadTimeoutSeconds, 0.001...3_600)),
        ConfigKey("limits.idleTimeoutSeconds", .seconds(\.limits.idleTimeoutSeconds, 0.001...86_400)),
        ConfigKey("limits.writeStallTimeoutSeconds", .seconds(\.limits.writeStallTimeoutSeconds, 0.001...86_400)),
        ConfigKey("limits.streamSendBufferBytes", .integer(\.limits.streamSendBufferBytes, 0...(64 << 20))),
        ConfigKey("sse.heartbeatSeconds", .seconds(\.sse.heartbeatSeconds, 0.001...3_600)),
        ConfigKey("sse.retryMilliseconds", .integer(\.sse.retryMilliseconds, 0...86_400_000)),
        ConfigKey("sequences.maxCount", .integer(\.sequences.maxCount, 1...10_000_000)),
        ConfigKey("sequences.maxStart", .integer(\.sequences.maxStart, 0...10_000_000)),
        ConfigKey("sequences.maxIntervalMilliseconds", .integer(\.sequences.maxIntervalMilliseconds, 1...86_400_000)),
        ConfigKey("cors.allowedOrigins", .strings(\.cors.allowedOrigins)),
        ConfigKey("shutdown.graceSeconds", .seconds(\.shutdown.graceSeconds, 0...3_600)),
        ConfigKey("shutdown.delaySeconds", .seconds(\.shutdown.delaySeconds, 0...3_600)),
        ConfigKey("log.requests", .boolean(\.log.requests)),
        ConfigKey("log.level", .level(\.log.level)),
        ConfigKey("log.redactQueryParameters", .names(\.log.redactQueryParameters)),
        ConfigKey("log.selfCalls", .boolean(\.log.selfCalls)),
        ConfigKey("upstream.baseURL", .url(\.upstream.baseURL), alias: "SPOUT_UPSTREAM_URL"),
        ConfigKey("upstream.attempts", .integer(\.upstream.attempts, 1...10)),
        ConfigKey("upstream.baseDelayMilliseconds", .integer(\.upstream.baseDelayMilliseconds, 0...60_000)),
        ConfigKey("upstream.maxDelayMilliseconds", .integer(\.upstream.maxDelayMilliseconds, 0...600_000)),
        ConfigKey("upstream.attemptTimeoutSeconds", .seconds(\.upstream.attemptTimeoutSeconds, 0.001...600)),
        ConfigKey("upstream.deadlineSeconds", .seconds(\.upstream.deadlineSeconds, 0.001...3_600)),
        ConfigKey("upstream.cacheTTLSeconds", .seconds(\.upstream.cacheTTLSeconds, 0...86_400)),
        ConfigKey("upstream.cacheMaxEntries", .integer(\.upstream.cacheMaxEntries, 0...1_000_000)),
        ConfigKey("upstream.cacheMaxBytes", .integer(\.upstream.cacheMaxBytes, 0...(1 << 40))),
        ConfigKey("upstream.cacheStaleSeconds", .seconds(\.upstream.cacheStaleSeconds, 0...86_400)),
        ConfigKey("upstream.pageSize", .integer(\.upstream.pageSize, 1...100)),
        ConfigKey("upstream.maxBodyBytes", .integer(\.upstream.maxBodyBytes, 1...(1 << 30))),
        ConfigKey("compression.enabled", .boolean(\.compression.enabled)),
        ConfigKey("compression.minimumBytes", .integer(\.compression.minimumBytes, 0...1_073_741_824)),
        ConfigKey("channels.maxChannels", .integer(\.channels.maxChannels, 1...10_000_000)),
        ConfigKey("channels.historyEvents", .integer(\.channels.historyEvents, 0...10_000_000)),
        ConfigKey("channels.historyBytes", .integer(\.channels.historyBytes, 0...(1 << 34))),
        ConfigKey("channels.historySeconds", .seconds(\.channels.historySeconds, 0...(86_400 * 30))),
        ConfigKey("channels.maxEventBytes", .integer(\.channels.maxEventBytes, 1...(64 << 20))),
        ConfigKey("channels.maxSubscribersPerChannel", .integer(\.channels.maxSubscribersPerChannel, 1...10_000_000)),
        ConfigKey("channels.maxChannelsPerSubscription", .integer(\.channels.maxChannelsPerSubscription, 1...10_000)),
        ConfigKey("channels.deadPeerSeconds", .integer(\.channels.deadPeerSeconds, 0...86_400)),
        ConfigKey("channels.replicaTimeoutSeconds", .integer(\.channels.replicaTimeoutSeconds, 2...3_600)),
        ConfigKey("channels.subscriberBufferEvents", .integer(\.channels.subscriberBufferEvents, 1...10_000_000)),
        ConfigKey("channels.subscriberBufferBytes", .integer(\.channels.subscriberBufferBytes, 1...(1 << 34))),
        ConfigKey("channels.overflow", .choice(Choice(\.channels.overflow))),
        ConfigKey("channels.publishTokens", .names(\.channels.publishTokens)),
        ConfigKey("channels.subscribeTokens", .names(\.channels.subscribeTokens)),
        ConfigKey("channels.redisURL", .redisURL(\.channels.redisURL), alias: "SPOUT_REDIS_URL"),
        ConfigKey(
            "channels.redisTLSCAFile",
            .text(\.channels.redisTLSCAFile, what: "file path"),
            alias: "SPOUT_REDIS_TLS_CA_FILE"
        ),
        ConfigKey(
            "channels.redisTLSCertificateFile",
            .text(\.channels.redisTLSCertificateFile, what: "file path"),
            alias: "SPOUT_REDIS_TLS_CERTIFICATE_FILE"
        ),
        ConfigKey(
            "channels.redisTLSPrivateKeyFile",
            .text(\.channels.redisTLSPrivateKeyFile, what: "file path"),
            alias: "SPOUT_REDIS_TLS_PRIVATE_KEY_FILE"
        ),
        ConfigKey("channels.redisReadiness", .choice(Choice(\.channels.redisReadiness))),
        ConfigKey("channels.redisKeyPrefix", .string(\.channels.redisKeyPrefix, allowed: nil)),
        ConfigKey(
            "channels.idempotencyWindowSeconds",
            .seconds(\.channels.idempotencyWindowSeconds, 1...(86_400 * 30))
        ),
        ConfigKey("channels.idempotencyMaxKeys", .integer(\.channels.idempotencyMaxKeys, 1...10_000_000)),
        ConfigKey("channels.publishRatePerMinute", .integer(\.channels.publishRatePerMinute, 0...1_000_000)),
        ConfigKey("channels.publishBurst", .integer(\.channels.publishBurst, 1...1_000_000)),
        ConfigKey(
            "channels.maxSubscriptionsPerSubject",
            .integer(\.channels.maxSubscriptionsPerSubject, 0...10_000_000)
        ),
        ConfigKey("channels.jwt.jwksFile", .text(\.channels.jwt.jwksFile, what: "file path")),
        ConfigKey("channels.jwt.jwksURL", .url(\.channels.jwt.jwksURL, use: .jwks)),
        ConfigKey("channels.jwt.jwksRefreshSeconds", .seconds(\.channels.jwt.jwksRefreshSeconds, 1...86_400)),
        ConfigKey("channels.jwt.jwksMinRefreshSeconds", .seconds(\.channels.jwt.jwksMinRefreshSeconds, 0...86_400)),
        ConfigKey("channels.jwt.leewaySeconds", .seconds(\.channels.jwt.leewaySeconds, 0...86_400)),
        ConfigKey("channels.jwt.issuer", .text(\.channels.jwt.issuer)),
        ConfigKey("channels.jwt.audience", .text(\.channels.jwt.audience)),
        ConfigKey("channels.jwt.cookieName", .text(\.channels.jwt.cookieName)),
        ConfigKey("channels.jwt.cacheEntries", .integer(\.channels.jwt.cacheEntries, 0...10_000_000)),
        ConfigKey("tls.certificateFile", .text(\.tls.certificateFile, what: "file path")),
        ConfigKey("tls.privateKeyFile", .text(\.tls.privateKeyFile, what: "file path")),
        ConfigKey("tls.port", .integer(\.tls.port, 0...65_535)),
        ConfigKey("tls.ocspResponseFile", .text(\.tls.ocspResponseFile, what: "file path")),
    ]

    static let named: [String: ConfigKey] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The dotted prefixes that are JSON objects in the file.
    static let sections: Set<String> = Set(
        all.flatMap { key in
            let parts = key.name.split(separator: ".")
            return (1..<max(parts.count, 1)).map { parts[..<$0].joined(separator: ".") }
        }
    )

    /// Every environment variable Spout reads at start-up: the keys', their aliases, and `SPOUT_CONFIG`.
    static let environmentNames: Set<String> = Set(
        all.map(\.environmentName) + all.compactMap(\.alias) + ["SPOUT_CONFIG"]
    )

    /// Stores a value given as text (environment variable or flag).
    func apply(text: String, to configuration: inout SpoutConfiguration, source: String) throws(ConfigError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        switch kind {
        case .integer(let path, let range):
            guard let value = Int(trimmed), range.contains(value) else {
                throw invalid(quoted(text), expected: "an integer in \(range.lowerBound)...\(range.upperBound)", source)
            }
            configuration[keyPath: path] = value
        case .seconds(let path, let range):
            guard let value = Double(trimmed), value.isFinite, range.contains(value) else {
                throw invalid(
                    quoted(text),
                    expected: "a number of seconds in \(range.lowerBound)...\(range.upperBound)",
                    source
                )
            }
            configuration[keyPath: path] = value
        case .string(let path, let allowed):
            guard !trimmed.isEmpty, allowed?.contains(trimmed) ?? true else {
                throw invalid(
                    quoted(text),
                    expected: allowed.map { "one of \($0.joined(separator: ", "))" } ?? "a non-empty string",
                    source
                )
            }
            configuration[keyPath: path] = trimmed
        case .text(let path, _):
            configuration[keyPath: path] = trimmed
        case .networks(let path):
            let items = trimmed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard TrustedProxies(items) != nil else {
                throw invalid(
                    quoted(text),
                    expected: "a comma-separated list of CIDR networks (10.0.0.0/8, ::1)",
                    source
                )
            }
            configuration[keyPath: path] = items
        case .level(let path):
            guard let level = LogLevel(rawValue: trimmed.lowercased()) else {
                throw invalid(
                    quoted(text),
                    expected: "one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", "))",
                    source
                )
            }
            configuration[keyPath: path] = level
        case .choice(let choice):
            guard choice.store(&configuration, trimmed) else {
                throw invalid(quoted(text), expected: "one of \(choice.allowed.joined(separator: ", "))", source)
            }
        case .boolean(let path):
            switch trimmed.lowercased() {
            case "true", "1", "yes", "on": configuration[keyPath: path] = true
            case "false", "0", "no", "off": configuration[keyPath: path] = false
            default: throw invalid(quoted(text), expected: "true or false", source)
            }
        case .strings(let path), .names(let path):
            let items = trimmed.split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            if case .names = kind, trimmed.isEmpty {
                configuration[keyPath: path] = []
                return
            }
            guard !items.contains(where: \.isEmpty) else {
                throw invalid(quoted(text), expected: "a comma-separated list", source)
            }
            configuration[keyPath: path] = items
        case .url(let path, let use):
            if !trimmed.isEmpty {
                let url = URLComponents(string: trimmed)
                let scheme = url?.scheme?.lowercased()
                let absolute = (scheme == "http" || scheme == "https") && url?.host?.isEmpty == false
                switch use {
                case .upstreamBase:
                    guard absolute, url?.query == nil else {
                        throw invalid(
                            quoted(text),
                            expected: "an http or https URL with a host (or empty for the demo data)",
                            source
                        )
                    }
                case .jwks:
                    guard absolute, url?.fragment == nil else {
                        throw invalid(
                            quoted(text),
                            expected: "an http or https URL with a host where the JWK Set is served (a query is "
                                + "allowed, a #fragment is not), or empty for none",
                            source
                        )
                    }
                }
            }
            configuration[keyPath: path] = trimmed
        case .redisURL(let path):
            if !trimmed.isEmpty {
                do {
                    _ = try RedisURL(parsing: trimmed)
                } catch {
                    throw invalid(
                        "(not shown: it may hold a password)",
                        expected:
                            "a redis:// or rediss:// URL (redis[s]://[user:password@]host[:port][/db]; \(error)), or empty",
                        source
                    )
                }
            }
            configuration[keyPath: path] = trimmed
        }
    }

    /// Stores a value from the JSON file.
    func apply(json value: ConfigJSON, to configuration: inout SpoutConfiguration, source: String) throws(ConfigError) {
        switch kind {
        case .integer(let path, let range):
            let expected = "an integer in \(range.lowerBound)...\(range.upperBound)"
            guard case .number(let text, let number) = value else {
                throw invalid(value.summary, expected: expected, source)
            }
            // Exact integers parse as integers (no rounding through Double); `80.0` and `8e1` are 80 too.
            guard let integer = Int(text) ?? Int(exactly: number), range.contains(integer) else {
                throw invalid(value.summary, expected: expected, source)
            }
            configuration[keyPath: path] = integer
        case .seconds(let path, let range):
            let expected = "a number of seconds in \(range.lowerBound)...\(range.upperBound)"
            guard case .number(_, let number) = value, number.isFinite, range.contains(number) else {
                throw invalid(value.summary, expected: expected, source)
            }
            configuration[keyPath: path] = number
        case .string, .text, .url, .redisURL, .level, .choice:
            guard case .string(let text) = value else { throw invalid(value.summary, expected: "a string", source) }
            try apply(text: text, to: &configuration, source: source)
        case .boolean(let path):
            guard case .boolean(let flag) = value else {
                throw invalid(value.summary, expected: "true or false", source)
            }
            configuration[keyPath: path] = flag
        case .networks(let path):
            let expected = "an array of CIDR networks (\"10.0.0.0/8\", \"::1\")"
            configuration[keyPath: path] = try strings(in: value, expected: expected, source) { text in
                TrustedProxies([text]) != nil
            }
        case .strings(let path), .names(let path):
            let mayBeEmpty = if case .names = kind { true } else { false }
            let expected = mayBeEmpty ? "an array of non-empty strings" : "a non-empty array of non-empty strings"
            let items = try strings(in: value, expected: expected, source) { !$0.isEmpty }
            guard mayBeEmpty || !items.isEmpty else { throw invalid("an empty array", expected: expected, source) }
            configuration[keyPath: path] = items
        }
    }

    /// The strings of a JSON array, each one `isValid`: anything else (not an array, an element that is not a
    /// string or not valid) is refused as not `expected`. The list kinds (`networks`, `strings`, `names`) read
    /// the file through it.
    private func strings(
        in value: ConfigJSON,
        expected: String,
        _ source: String,
        isValid: (String) -> Bool
    ) throws(ConfigError) -> [String] {
        guard case .array(let elements) = value else { throw invalid(value.summary, expected: expected, source) }
        var items: [String] = []
        for element in elements {
            guard case .string(let text) = element, isValid(text) else {
                throw invalid("an array holding \(element.summary)", expected: expected, source)
            }
            items.append(text)
        }
        return items
    }

    /// The default, as the file would hold it: `8080`, `"127.0.0.1"`, `["*"]`, `true`.
    var defaultText: String { valueText(in: SpoutConfiguration()) }

    /// The key's value in `defaults`, as the file would hold it.
    func valueText(in defaults: SpoutConfiguration) -> String {
        switch kind {
        case .integer(let path, _): return String(defaults[keyPath: path])
        case .seconds(let path, _):
            let value = defaults[keyPath: path]
            return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        case .string(let path, _), .text(let path, _), .url(let path, _):
            return ConfigJSON.quote(defaults[keyPath: path])
        case .redisURL(let path):
            // Its description never shows the password (this text goes to the start-up log).
            let text = defaults[keyPath: path]
            return ConfigJSON.quote((try? RedisURL(parsing: text))?.description ?? text)
        case .boolean(let path): return String(defaults[keyPath: path])
        case .strings(let path), .names(let path), .networks(let path):
            return "[" + defaults[keyPath: path].map(ConfigJSON.quote).joined(separator: ",") + "]"
        case .level(let path): return ConfigJSON.quote(defaults[keyPath: path].rawValue)
        case .choice(let choice): return ConfigJSON.quote(choice.text(defaults))
        }
    }

    /// ``valueText(in:)`` for a log: a list of tokens (`channels.publishTokens`, `channels.subscribeTokens`) as
    /// how many there are, never the tokens.
    func displayText(in configuration: SpoutConfiguration) -> String {
        guard name.hasSuffix("Tokens"), case .names(let path) = kind else { return valueText(in: configuration) }
        let count = configuration[keyPath: path].count
        return "[\(count) token\(count == 1 ? "" : "s")]"
    }

    /// What values the key takes, in a few words: `integer 0...65535`, `seconds`, `true|false`.
    var typeText: String {
        switch kind {
        case .integer(_, let range): "integer \(range.lowerBound)...\(range.upperBound)"
        case .seconds(_, let range):
            "seconds \(ConfigKey.plain(range.lowerBound))...\(ConfigKey.plain(range.upperBound))"
        case .string(_, let allowed): allowed?.joined(separator: "|") ?? "string"
        case .text(_, let what): "\(what) (may be empty)"
        case .networks: "list of CIDR networks (may be empty)"
        case .url: "URL"
        case .redisURL: "redis URL"
        case .boolean: "true|false"
        case .strings: "list"
        case .names: "list (may be empty)"
        case .level: LogLevel.allCases.map(\.rawValue).joined(separator: "|")
        case .choice(let choice): choice.allowed.joined(separator: "|")
        }
    }

    private static func plain(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    private func invalid(_ value: String, expected: String, _ source: String) -> ConfigError {
        .invalidValue(key: name, value: value, expected: expected, source: source)
    }

    private func quoted(_ text: String) -> String {
        ConfigJSON.quote(text)
    }
}

/// A configuration value that is one of a fixed set of words: an enum whose raw values are those words, so the
/// code compares cases and only loading sees the text.
protocol ConfigChoice: RawRepresentable, CaseIterable where RawValue == String {}
