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

    private init(name: String, kind: Kind, alias: String? = nil) {
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
        ConfigKey(name: "host", kind: .string(\.host, allowed: nil)),
        ConfigKey(name: "port", kind: .integer(\.port, 0...65_535)),
        ConfigKey(name: "eventLoops", kind: .integer(\.eventLoops, 0...256)),
        ConfigKey(name: "backlog", kind: .integer(\.backlog, 1...65_535)),
        ConfigKey(name: "maxConnections", kind: .integer(\.maxConnections, 1...1_000_000)),
        ConfigKey(name: "probeConnections", kind: .integer(\.probeConnections, 0...1_000)),
        ConfigKey(name: "trustedProxies", kind: .networks(\.trustedProxies)),
        ConfigKey(name: "limits.maxHeaderBytes", kind: .integer(\.limits.maxHeaderBytes, 256...1_048_576)),
        ConfigKey(name: "limits.maxHeaderCount", kind: .integer(\.limits.maxHeaderCount, 1...10_000)),
        ConfigKey(name: "limits.maxBodyBytes", kind: .integer(\.limits.maxBodyBytes, 0...1_073_741_824)),
        ConfigKey(
            name: "limits.headReadTimeoutSeconds",
            kind: .seconds(\.limits.headReadTimeoutSeconds, 0.001...3_600)
        ),
        ConfigKey(
            name: "limits.bodyReadTimeoutSeconds",
            kind: .seconds(\.limits.bodyReadTimeoutSeconds, 0.001...3_600)
        ),
        ConfigKey(name: "limits.idleTimeoutSeconds", kind: .seconds(\.limits.idleTimeoutSeconds, 0.001...86_400)),
        ConfigKey(
            name: "limits.writeStallTimeoutSeconds",
            kind: .seconds(\.limits.writeStallTimeoutSeconds, 0.001...86_400)
        ),
        ConfigKey(
            name: "limits.streamSendBufferBytes",
            kind: .integer(\.limits.streamSendBufferBytes, 0...(64 << 20))
        ),
        ConfigKey(name: "sse.heartbeatSeconds", kind: .seconds(\.sse.heartbeatSeconds, 0.001...3_600)),
        ConfigKey(name: "sse.retryMilliseconds", kind: .integer(\.sse.retryMilliseconds, 0...86_400_000)),
        ConfigKey(name: "sequences.maxCount", kind: .integer(\.sequences.maxCount, 1...10_000_000)),
        ConfigKey(name: "sequences.maxStart", kind: .integer(\.sequences.maxStart, 0...10_000_000)),
        ConfigKey(
            name: "sequences.maxIntervalMilliseconds",
            kind: .integer(\.sequences.maxIntervalMilliseconds, 1...86_400_000)
        ),
        ConfigKey(name: "cors.allowedOrigins", kind: .strings(\.cors.allowedOrigins)),
        ConfigKey(name: "shutdown.graceSeconds", kind: .seconds(\.shutdown.graceSeconds, 0...3_600)),
        ConfigKey(name: "shutdown.delaySeconds", kind: .seconds(\.shutdown.delaySeconds, 0...3_600)),
        ConfigKey(name: "log.requests", kind: .boolean(\.log.requests)),
        ConfigKey(name: "log.level", kind: .level(\.log.level)),
        ConfigKey(name: "log.redactQueryParameters", kind: .names(\.log.redactQueryParameters)),
        ConfigKey(name: "log.selfCalls", kind: .boolean(\.log.selfCalls)),
        ConfigKey(name: "upstream.baseURL", kind: .url(\.upstream.baseURL), alias: "SPOUT_UPSTREAM_URL"),
        ConfigKey(name: "upstream.attempts", kind: .integer(\.upstream.attempts, 1...10)),
        ConfigKey(name: "upstream.baseDelayMilliseconds", kind: .integer(\.upstream.baseDelayMilliseconds, 0...60_000)),
        ConfigKey(name: "upstream.maxDelayMilliseconds", kind: .integer(\.upstream.maxDelayMilliseconds, 0...600_000)),
        ConfigKey(
            name: "upstream.attemptTimeoutSeconds",
            kind: .seconds(\.upstream.attemptTimeoutSeconds, 0.001...600)
        ),
        ConfigKey(name: "upstream.deadlineSeconds", kind: .seconds(\.upstream.deadlineSeconds, 0.001...3_600)),
        ConfigKey(name: "upstream.cacheTTLSeconds", kind: .seconds(\.upstream.cacheTTLSeconds, 0...86_400)),
        ConfigKey(name: "upstream.cacheMaxEntries", kind: .integer(\.upstream.cacheMaxEntries, 0...1_000_000)),
        ConfigKey(name: "upstream.cacheMaxBytes", kind: .integer(\.upstream.cacheMaxBytes, 0...(1 << 40))),
        ConfigKey(name: "upstream.cacheStaleSeconds", kind: .seconds(\.upstream.cacheStaleSeconds, 0...86_400)),
        ConfigKey(name: "upstream.pageSize", kind: .integer(\.upstream.pageSize, 1...100)),
        ConfigKey(name: "upstream.maxBodyBytes", kind: .integer(\.upstream.maxBodyBytes, 1...(1 << 30))),
        ConfigKey(name: "compression.enabled", kind: .boolean(\.compression.enabled)),
        ConfigKey(name: "compression.minimumBytes", kind: .integer(\.compression.minimumBytes, 0...1_073_741_824)),
        ConfigKey(name: "channels.maxChannels", kind: .integer(\.channels.maxChannels, 1...10_000_000)),
        ConfigKey(name: "channels.historyEvents", kind: .integer(\.channels.historyEvents, 0...10_000_000)),
        ConfigKey(name: "channels.historyBytes", kind: .integer(\.channels.historyBytes, 0...(1 << 34))),
        ConfigKey(name: "channels.historySeconds", kind: .seconds(\.channels.historySeconds, 0...(86_400 * 30))),
        ConfigKey(name: "channels.maxEventBytes", kind: .integer(\.channels.maxEventBytes, 1...(64 << 20))),
        ConfigKey(
            name: "channels.maxSubscribersPerChannel",
            kind: .integer(\.channels.maxSubscribersPerChannel, 1...10_000_000)
        ),
        ConfigKey(
            name: "channels.maxChannelsPerSubscription",
            kind: .integer(\.channels.maxChannelsPerSubscription, 1...10_000)
        ),
        ConfigKey(name: "channels.deadPeerSeconds", kind: .integer(\.channels.deadPeerSeconds, 0...86_400)),
        ConfigKey(
            name: "channels.replicaTimeoutSeconds",
            kind: .integer(\.channels.replicaTimeoutSeconds, 2...3_600)
        ),
        ConfigKey(
            name: "channels.subscriberBufferEvents",
            kind: .integer(\.channels.subscriberBufferEvents, 1...10_000_000)
        ),
        ConfigKey(
            name: "channels.subscriberBufferBytes",
            kind: .integer(\.channels.subscriberBufferBytes, 1...(1 << 34))
        ),
        ConfigKey(
            name: "channels.overflow",
            kind: .choice(Choice(\.channels.overflow))
        ),
        ConfigKey(name: "channels.publishTokens", kind: .names(\.channels.publishTokens)),
        ConfigKey(name: "channels.subscribeTokens", kind: .names(\.channels.subscribeTokens)),
        ConfigKey(name: "channels.redisURL", kind: .redisURL(\.channels.redisURL), alias: "SPOUT_REDIS_URL"),
        ConfigKey(
            name: "channels.redisTLSCAFile",
            kind: .text(\.channels.redisTLSCAFile, what: "file path"),
            alias: "SPOUT_REDIS_TLS_CA_FILE"
        ),
        ConfigKey(
            name: "channels.redisTLSCertificateFile",
            kind: .text(\.channels.redisTLSCertificateFile, what: "file path"),
            alias: "SPOUT_REDIS_TLS_CERTIFICATE_FILE"
        ),
        ConfigKey(
            name: "channels.redisTLSPrivateKeyFile",
            kind: .text(\.channels.redisTLSPrivateKeyFile, what: "file path"),
            alias: "SPOUT_REDIS_TLS_PRIVATE_KEY_FILE"
        ),
        ConfigKey(
            name: "channels.redisReadiness",
            kind: .choice(Choice(\.channels.redisReadiness))
        ),
        ConfigKey(name: "channels.redisKeyPrefix", kind: .string(\.channels.redisKeyPrefix, allowed: nil)),
        ConfigKey(
            name: "channels.idempotencyWindowSeconds",
            kind: .seconds(\.channels.idempotencyWindowSeconds, 1...(86_400 * 30))
        ),
        ConfigKey(
            name: "channels.idempotencyMaxKeys",
            kind: .integer(\.channels.idempotencyMaxKeys, 1...10_000_000)
        ),
        ConfigKey(
            name: "channels.publishRatePerMinute",
            kind: .integer(\.channels.publishRatePerMinute, 0...1_000_000)
        ),
        ConfigKey(name: "channels.publishBurst", kind: .integer(\.channels.publishBurst, 1...1_000_000)),
        ConfigKey(
            name: "channels.maxSubscriptionsPerSubject",
            kind: .integer(\.channels.maxSubscriptionsPerSubject, 0...10_000_000)
        ),
        ConfigKey(name: "channels.jwt.jwksFile", kind: .text(\.channels.jwt.jwksFile, what: "file path")),
        ConfigKey(name: "channels.jwt.jwksURL", kind: .url(\.channels.jwt.jwksURL, use: .jwks)),
        ConfigKey(
            name: "channels.jwt.jwksRefreshSeconds",
            kind: .seconds(\.channels.jwt.jwksRefreshSeconds, 1...86_400)
        ),
        ConfigKey(
            name: "channels.jwt.jwksMinRefreshSeconds",
            kind: .seconds(\.channels.jwt.jwksMinRefreshSeconds, 0...86_400)
        ),
        ConfigKey(name: "channels.jwt.leewaySeconds", kind: .seconds(\.channels.jwt.leewaySeconds, 0...86_400)),
        ConfigKey(name: "channels.jwt.issuer", kind: .text(\.channels.jwt.issuer)),
        ConfigKey(name: "channels.jwt.audience", kind: .text(\.channels.jwt.audience)),
        ConfigKey(name: "channels.jwt.cookieName", kind: .text(\.channels.jwt.cookieName)),
        ConfigKey(name: "channels.jwt.cacheEntries", kind: .integer(\.channels.jwt.cacheEntries, 0...10_000_000)),
        ConfigKey(name: "tls.certificateFile", kind: .text(\.tls.certificateFile, what: "file path")),
        ConfigKey(name: "tls.privateKeyFile", kind: .text(\.tls.privateKeyFile, what: "file path")),
        ConfigKey(name: "tls.port", kind: .integer(\.tls.port, 0...65_535)),
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
            guard case .array(let elements) = value else { throw invalid(value.summary, expected: expected, source) }
            var items: [String] = []
            for element in elements {
                guard case .string(let text) = element, TrustedProxies([text]) != nil else {
                    throw invalid("an array holding \(element.summary)", expected: expected, source)
                }
                items.append(text)
            }
            configuration[keyPath: path] = items
        case .strings(let path), .names(let path):
            let mayBeEmpty = if case .names = kind { true } else { false }
            let expected = mayBeEmpty ? "an array of non-empty strings" : "a non-empty array of non-empty strings"
            guard case .array(let elements) = value else { throw invalid(value.summary, expected: expected, source) }
            var items: [String] = []
            for element in elements {
                guard case .string(let text) = element, !text.isEmpty else {
                    throw invalid("an array holding \(element.summary)", expected: expected, source)
                }
                items.append(text)
            }
            guard mayBeEmpty || !items.isEmpty else { throw invalid("an empty array", expected: expected, source) }
            configuration[keyPath: path] = items
        }
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
