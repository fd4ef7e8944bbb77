import Foundation

extension SpoutConfiguration {
    /// What a command line asked for besides configuration.
    public enum Command: Equatable, Sendable {
        /// Run the service with this configuration.
        case run(SpoutConfiguration)
        /// Print the usage text and exit.
        case help
    }

    /// The flags `spout` understands, for `--help`.
    public static let usage = """
        usage: spout [--config FILE] [--host ADDRESS] [--port PORT] [--event-loops N] [--upstream URL] [--help]

        Serves streamed sequences over HTTP. Every configuration key can also be set in a JSON
        file (--config or SPOUT_CONFIG) or an environment variable (SPOUT_PORT, SPOUT_SSE_HEARTBEAT_SECONDS,
        ...); flags win over the environment, which wins over the file, which wins over the defaults.
        """

    /// Builds the configuration from defaults, the optional file, the environment and the flags.
    ///
    /// - Parameters:
    ///   - arguments: The command-line arguments without the program name.
    ///   - environment: The process environment.
    /// - Throws: ``ConfigError`` naming the key, flag or file that is wrong.
    public static func load(arguments: [String], environment: [String: String]) throws(ConfigError) -> Command {
        var flags: [(key: String, value: String)] = []
        var configPath = environment["SPOUT_CONFIG"]
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument == "--help" || argument == "-h" { return .help }
            let (name, inlineValue) = splitFlag(argument)
            guard let key = flagKeys[name] else { throw .invalidFlag(argument) }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                index += 1
                guard index < arguments.endIndex else { throw .invalidFlag(argument) }
                value = arguments[index]
            }
            if key == "config" { configPath = value } else { flags.append((key, value)) }
            index += 1
        }

        var configuration = SpoutConfiguration()
        if let configPath, !configPath.isEmpty {
            try configuration.apply(fileAt: configPath)
        }
        for key in ConfigKey.all {
            if let value = environment[key.environmentName] {
                try key.apply(text: value, to: &configuration, source: key.environmentName)
            } else if let alias = key.alias, let value = environment[alias] {
                try key.apply(text: value, to: &configuration, source: alias)
            }
        }
        for (name, value) in flags {
            guard let key = ConfigKey.named[name] else { throw .invalidFlag(name) }
            try key.apply(text: value, to: &configuration, source: "--\(flagName(for: name))")
        }
        return .run(configuration)
    }

    /// Applies the JSON object in `data` over this configuration.
    public mutating func apply(json data: Data, source: String) throws(ConfigError) {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw .malformedFile(path: source, reason: "invalid JSON")
        }
        guard let root = object as? [String: Any] else {
            throw .malformedFile(path: source, reason: "the top level must be an object")
        }
        try apply(object: root, prefix: "", source: source)
    }

    private mutating func apply(fileAt path: String) throws(ConfigError) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .unreadableFile(path: path, reason: "no such file or not readable")
        }
        try apply(json: data, source: path)
    }

    private mutating func apply(object: [String: Any], prefix: String, source: String) throws(ConfigError) {
        for (name, value) in object.sorted(by: { $0.key < $1.key }) {
            let path = prefix.isEmpty ? name : "\(prefix).\(name)"
            if let nested = value as? [String: Any] {
                guard ConfigKey.sections.contains(path) else { throw .unknownKey(path, source: source) }
                try apply(object: nested, prefix: path, source: source)
            } else {
                guard let key = ConfigKey.named[path] else { throw .unknownKey(path, source: source) }
                try key.apply(json: value, to: &self, source: source)
            }
        }
    }

    /// Flag names (without `--`) and the keys they set.
    private static let flagKeys: [String: String] = [
        "config": "config",
        "host": "host",
        "port": "port",
        "event-loops": "eventLoops",
        "upstream": "upstream.baseURL",
    ]

    private static func flagName(for key: String) -> String {
        flagKeys.first { $0.value == key }?.key ?? key
    }

    private static func splitFlag(_ argument: String) -> (name: String, value: String?) {
        guard argument.hasPrefix("--") else { return (argument, nil) }
        let body = argument.dropFirst(2)
        if let equals = body.firstIndex(of: "=") {
            return (String(body[..<equals]), String(body[body.index(after: equals)...]))
        }
        return (String(body), nil)
    }
}

/// One configuration key: its dotted name, its environment variable, and how to parse and store it.
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
        case boolean(WritableKeyPath<SpoutConfiguration, Bool>)
        case strings(WritableKeyPath<SpoutConfiguration, [String]>)
        /// An absolute `http`/`https` URL with a host, or empty for "not set".
        case url(WritableKeyPath<SpoutConfiguration, String>)
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
        ConfigKey(name: "limits.maxHeaderBytes", kind: .integer(\.limits.maxHeaderBytes, 256...1_048_576)),
        ConfigKey(name: "limits.maxHeaderCount", kind: .integer(\.limits.maxHeaderCount, 1...10_000)),
        ConfigKey(name: "limits.maxBodyBytes", kind: .integer(\.limits.maxBodyBytes, 0...1_073_741_824)),
        ConfigKey(name: "limits.headReadTimeoutSeconds", kind: .seconds(\.limits.headReadTimeoutSeconds, 0.001...3_600)),
        ConfigKey(name: "limits.idleTimeoutSeconds", kind: .seconds(\.limits.idleTimeoutSeconds, 0.001...86_400)),
        ConfigKey(
            name: "limits.writeStallTimeoutSeconds",
            kind: .seconds(\.limits.writeStallTimeoutSeconds, 0.001...86_400)
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
        ConfigKey(name: "log.requests", kind: .boolean(\.log.requests)),
        ConfigKey(name: "upstream.baseURL", kind: .url(\.upstream.baseURL), alias: "SPOUT_UPSTREAM_URL"),
        ConfigKey(name: "upstream.attempts", kind: .integer(\.upstream.attempts, 1...10)),
        ConfigKey(name: "upstream.baseDelayMilliseconds", kind: .integer(\.upstream.baseDelayMilliseconds, 0...60_000)),
        ConfigKey(name: "upstream.maxDelayMilliseconds", kind: .integer(\.upstream.maxDelayMilliseconds, 0...600_000)),
        ConfigKey(name: "upstream.attemptTimeoutSeconds", kind: .seconds(\.upstream.attemptTimeoutSeconds, 0.001...600)),
        ConfigKey(name: "upstream.deadlineSeconds", kind: .seconds(\.upstream.deadlineSeconds, 0.001...3_600)),
        ConfigKey(name: "upstream.cacheTTLSeconds", kind: .seconds(\.upstream.cacheTTLSeconds, 0...86_400)),
        ConfigKey(name: "upstream.cacheMaxEntries", kind: .integer(\.upstream.cacheMaxEntries, 0...1_000_000)),
        ConfigKey(name: "upstream.cacheMaxBytes", kind: .integer(\.upstream.cacheMaxBytes, 0...(1 << 40))),
        ConfigKey(name: "upstream.cacheStaleSeconds", kind: .seconds(\.upstream.cacheStaleSeconds, 0...86_400)),
        ConfigKey(name: "upstream.pageSize", kind: .integer(\.upstream.pageSize, 1...100)),
        ConfigKey(name: "compression.enabled", kind: .boolean(\.compression.enabled)),
        ConfigKey(name: "compression.minimumBytes", kind: .integer(\.compression.minimumBytes, 0...1_073_741_824)),
    ]

    static let named: [String: ConfigKey] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The dotted prefixes that are JSON objects in the file.
    static let sections: Set<String> = Set(all.compactMap { key in
        key.name.split(separator: ".").count > 1 ? String(key.name.split(separator: ".")[0]) : nil
    })

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
                throw invalid(quoted(text), expected: "a number of seconds in \(range.lowerBound)...\(range.upperBound)", source)
            }
            configuration[keyPath: path] = value
        case .string(let path, let allowed):
            guard !trimmed.isEmpty, allowed?.contains(trimmed) ?? true else {
                throw invalid(quoted(text), expected: allowed.map { "one of \($0.joined(separator: ", "))" } ?? "a non-empty string", source)
            }
            configuration[keyPath: path] = trimmed
        case .boolean(let path):
            switch trimmed.lowercased() {
            case "true", "1", "yes", "on": configuration[keyPath: path] = true
            case "false", "0", "no", "off": configuration[keyPath: path] = false
            default: throw invalid(quoted(text), expected: "true or false", source)
            }
        case .strings(let path):
            let items = trimmed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !items.isEmpty, !items.contains(where: \.isEmpty) else {
                throw invalid(quoted(text), expected: "a comma-separated list", source)
            }
            configuration[keyPath: path] = items
        case .url(let path):
            if !trimmed.isEmpty {
                guard let url = URLComponents(string: trimmed), let scheme = url.scheme?.lowercased(),
                    scheme == "http" || scheme == "https", url.host?.isEmpty == false, url.query == nil
                else {
                    throw invalid(quoted(text), expected: "an http or https URL with a host (or empty for the demo data)", source)
                }
            }
            configuration[keyPath: path] = trimmed
        }
    }

    /// Stores a value from the JSON file.
    func apply(json value: Any, to configuration: inout SpoutConfiguration, source: String) throws(ConfigError) {
        switch kind {
        case .integer(let path, let range):
            guard let number = value as? NSNumber, !isBoolean(number), let integer = Int(exactly: number.doubleValue),
                range.contains(integer)
            else {
                throw invalid(describe(value), expected: "an integer in \(range.lowerBound)...\(range.upperBound)", source)
            }
            configuration[keyPath: path] = integer
        case .seconds(let path, let range):
            guard let number = value as? NSNumber, !isBoolean(number), number.doubleValue.isFinite,
                range.contains(number.doubleValue)
            else {
                throw invalid(describe(value), expected: "a number of seconds in \(range.lowerBound)...\(range.upperBound)", source)
            }
            configuration[keyPath: path] = number.doubleValue
        case .string, .url:
            guard let text = value as? String else { throw invalid(describe(value), expected: "a string", source) }
            try apply(text: text, to: &configuration, source: source)
        case .boolean(let path):
            guard let number = value as? NSNumber, isBoolean(number) else {
                throw invalid(describe(value), expected: "true or false", source)
            }
            configuration[keyPath: path] = number.boolValue
        case .strings(let path):
            guard let items = value as? [String], !items.isEmpty, !items.contains(where: \.isEmpty) else {
                throw invalid(describe(value), expected: "a non-empty array of strings", source)
            }
            configuration[keyPath: path] = items
        }
    }

    private func invalid(_ value: String, expected: String, _ source: String) -> ConfigError {
        .invalidValue(key: name, value: value, expected: expected, source: source)
    }

    private func quoted(_ text: String) -> String {
        "\"\(text)\""
    }

    private func describe(_ value: Any) -> String {
        if let text = value as? String { return quoted(text) }
        if let number = value as? NSNumber { return isBoolean(number) ? (number.boolValue ? "true" : "false") : "\(number)" }
        if value is NSNull { return "null" }
        return "a \(type(of: value))"
    }

    private func isBoolean(_ number: NSNumber) -> Bool {
        // JSONSerialization yields booleans as NSNumber; on Linux their objCType is "c".
        String(cString: number.objCType) == "c" || type(of: number) == type(of: NSNumber(value: true))
    }
}
