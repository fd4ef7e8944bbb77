import Foundation
import RESP

extension SpoutConfiguration {
    /// What a command line asked for besides configuration.
    public enum Command: Equatable, Sendable {
        /// Run the service with this configuration.
        case run(SpoutConfiguration)
        /// Print the usage text (``usage``) and exit.
        case help
        /// Print the version (``BuildInfo/versionLine``) and exit.
        case version
    }

    /// The text `spout --help` prints: the flags, the layering, and every key with its default and its
    /// environment variable, generated from the one table of keys.
    public static var usage: String {
        var text = """
            usage: spout [--config FILE] [--host ADDRESS] [--port PORT] [--event-loops N] [--upstream URL]
                         [--log-level LEVEL] [--help] [--version]

            Serves streamed sequences over HTTP. Every key below can be set in a JSON file (--config FILE or
            SPOUT_CONFIG=FILE), in its environment variable, and some by a flag; flags win over the environment,
            which wins over the file, which wins over these defaults. Lists in environment variables are
            comma-separated.

            keys:

            """
        text += ConfigKey.helpTable()
        return text
    }

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
            if argument == "--version" { return .version }
            let (name, inlineValue) = splitFlag(argument)
            guard let key = flagKeys[name] else {
                let known = flagKeys.keys.map { "--\($0)" } + ["--help", "--version"]
                throw .invalidFlag(argument, suggestion: Suggestion.closest(to: argument, among: known))
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                index += 1
                guard index < arguments.endIndex else { throw .invalidFlag(argument, suggestion: nil) }
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
            guard let key = ConfigKey.named[name] else { throw .invalidFlag(name, suggestion: nil) }
            try key.apply(text: value, to: &configuration, source: "--\(flagName(for: name))")
        }
        try configuration.checkTLS()
        return .run(configuration)
    }

    /// Every key with its value here, as the file would hold it (`"port"` → `8080`), in the table's order: the
    /// effective configuration that start-up logs at `debug`.
    /// Secrets are not shown: a list of tokens appears as how many there are (`"[3 tokens]"`), and a Redis URL
    /// without its password.
    public var effectiveValues: [(key: String, value: String)] {
        ConfigKey.all.map { ($0.name, $0.displayText(in: self)) }
    }

    /// The `SPOUT_*` variables of `environment` that set nothing (usually typos), each with the closest known
    /// name; start-up reports them as warnings and goes on.
    public static func unknownEnvironmentVariables(in environment: [String: String]) -> [ConfigWarning] {
        let known = ConfigKey.environmentNames
        return environment.keys.filter { $0.hasPrefix("SPOUT_") && !known.contains($0) }.sorted().map { name in
            ConfigWarning(variable: name, suggestion: Suggestion.closest(to: name, among: known.sorted()))
        }
    }

    /// Applies the JSON object in `data` over this configuration.
    ///
    /// - Throws: ``ConfigError/invalidJSON(path:line:column:reason:)`` with the place of a syntax error (trailing
    ///   commas and duplicate keys included), ``ConfigError/unknownKey(_:source:suggestion:)`` with the closest
    ///   known key, ``ConfigError/invalidValue(key:value:expected:source:)`` saying what the value was.
    public mutating func apply(json data: Data, source: String) throws(ConfigError) {
        let document: ConfigJSON
        do {
            document = try ConfigJSON.parse(Array(data))
        } catch {
            throw .invalidJSON(path: source, line: error.line, column: error.column, reason: error.reason)
        }
        guard case .object(let root) = document else {
            throw .malformedFile(path: source, reason: "the top level must be an object, got \(document.summary)")
        }
        try apply(members: root, prefix: "", source: source)
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

    private mutating func apply(members: [(name: String, value: ConfigJSON)], prefix: String, source: String)
        throws(ConfigError)
    {
        for (name, value) in members {
            let path = prefix.isEmpty ? name : "\(prefix).\(name)"
            if case .object(let nested) = value, ConfigKey.sections.contains(path) {
                try apply(members: nested, prefix: path, source: source)
            } else if let key = ConfigKey.named[path] {
                try key.apply(json: value, to: &self, source: source)
            } else if ConfigKey.sections.contains(path) {
                throw .invalidValue(key: path, value: value.summary, expected: "an object", source: source)
            } else {
                let known = ConfigKey.all.map(\.name) + ConfigKey.sections.sorted()
                throw .unknownKey(path, source: source, suggestion: Suggestion.closest(to: path, among: known))
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
        "log-level": "log.level",
    ]

    /// The flag that sets `key`, without `--`, if there is one.
    static func flagName(for key: String) -> String {
        flagKeys.first { $0.value == key }?.key ?? key
    }

    /// Whether a flag sets `key`.
    static func hasFlag(for key: String) -> Bool {
        flagKeys.values.contains(key)
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

extension SpoutConfiguration {
    /// The `rediss://` files: a client certificate needs its key and the other way round, and none is given unless
    /// `channels.redisURL` is `rediss://` (a CA file beside a `redis://` URL would otherwise be ignored silently,
    /// with the connection in clear). Whether the files are good is checked when the service starts.
    func checkRedisTLS() throws(ConfigError) {
        let certificate = channels.redisTLSCertificateFile
        let key = channels.redisTLSPrivateKeyFile
        if certificate.isEmpty != key.isEmpty {
            let missing = certificate.isEmpty ? "channels.redisTLSCertificateFile" : "channels.redisTLSPrivateKeyFile"
            let other = certificate.isEmpty ? "channels.redisTLSPrivateKeyFile" : "channels.redisTLSCertificateFile"
            throw .invalidValue(
                key: missing,
                value: "nothing",
                expected: "a PEM file when \(other) is set",
                source: "the configuration"
            )
        }
        let usesTLS = (try? RedisURL(parsing: channels.redisURL))?.usesTLS ?? false
        for (name, value) in [
            ("channels.redisTLSCAFile", channels.redisTLSCAFile), ("channels.redisTLSCertificateFile", certificate),
        ] where !value.isEmpty && !usesTLS {
            throw .invalidValue(
                key: name,
                value: value,
                expected: "empty unless channels.redisURL is a rediss:// URL",
                source: "the configuration"
            )
        }
    }

    /// The TLS keys that only make sense together: a certificate needs its key and the other way round, and
    /// `tls.port` needs both and a port of its own. (Whether the files are good is checked when the service
    /// starts, where OpenSSL reads them.)
    func checkTLS() throws(ConfigError) {
        try checkRedisTLS()
        if tls.certificateFile.isEmpty != tls.privateKeyFile.isEmpty {
            let missing = tls.certificateFile.isEmpty ? "tls.certificateFile" : "tls.privateKeyFile"
            let other = tls.certificateFile.isEmpty ? "tls.privateKeyFile" : "tls.certificateFile"
            throw .invalidValue(
                key: missing,
                value: "nothing",
                expected: "a PEM file when \(other) is set",
                source: "the configuration"
            )
        }
        if !tls.ocspResponseFile.isEmpty, !tls.isEnabled {
            throw .invalidValue(
                key: "tls.ocspResponseFile",
                value: tls.ocspResponseFile,
                expected: "empty unless tls.certificateFile and tls.privateKeyFile are set",
                source: "the configuration"
            )
        }
        if tls.port != 0, !tls.isEnabled {
            throw .invalidValue(
                key: "tls.port",
                value: "\(tls.port)",
                expected: "0 unless tls.certificateFile and tls.privateKeyFile are set",
                source: "the configuration"
            )
        }
        if tls.port != 0, tls.port == port {
            throw .invalidValue(
                key: "tls.port",
                value: "\(tls.port)",
                expected: "a port other than port (0 serves HTTPS on port itself)",
                source: "the configuration"
            )
        }
    }
}
