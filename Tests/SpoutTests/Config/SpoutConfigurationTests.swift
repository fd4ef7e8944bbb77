import Foundation
import Testing

@testable import Spout

@Suite struct SpoutConfigurationTests {
    private static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private func load(_ arguments: [String] = [], _ environment: [String: String] = [:]) throws -> SpoutConfiguration {
        guard case .run(let configuration) = try SpoutConfiguration.load(arguments: arguments, environment: environment)
        else {
            Issue.record("expected a run command")
            return SpoutConfiguration()
        }
        return configuration
    }

    @Test func shippedFileEqualsEmbeddedDefaults() throws {
        let path = Self.repositoryRoot.appendingPathComponent("config/spout.json").path
        var fromFile = SpoutConfiguration()
        fromFile.port = 1  // prove the file really overwrites
        try fromFile.apply(json: Data(contentsOf: URL(fileURLWithPath: path)), source: path)
        #expect(fromFile == SpoutConfiguration())
        #expect(try load(["--config", path]) == SpoutConfiguration())
    }

    @Test func environmentOverridesDefaultsAndFlagsOverrideEnvironment() throws {
        let configuration = try load(
            ["--port", "9090", "--host=0.0.0.0"],
            [
                "SPOUT_PORT": "7070", "SPOUT_SSE_HEARTBEAT_SECONDS": "2.5",
                "SPOUT_CORS_ALLOWED_ORIGINS": "https://a.example, https://b.example", "SPOUT_LOG_REQUESTS": "false",
            ]
        )
        #expect(configuration.port == 9090)
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.sse.heartbeatSeconds == 2.5)
        #expect(configuration.cors.allowedOrigins == ["https://a.example", "https://b.example"])
        #expect(configuration.log.requests == false)
        let cache = try load([], ["SPOUT_UPSTREAM_CACHE_MAX_BYTES": "1048576"])
        #expect(cache.upstream.cacheMaxBytes == 1_048_576)
    }

    /// `channels.overflow` and `channels.redisReadiness` load into their enums, from a file and from the
    /// environment, and a word outside them is refused with the words it may be.
    @Test func choiceKeysLoadIntoTheirEnums() throws {
        #expect(SpoutConfiguration().channels.overflow == .disconnect)
        #expect(SpoutConfiguration().channels.redisReadiness == .report)
        let fromEnvironment = try load(
            [],
            ["SPOUT_CHANNELS_OVERFLOW": "drop-oldest", "SPOUT_CHANNELS_REDIS_READINESS": "fail"]
        )
        #expect(fromEnvironment.channels.overflow == .dropOldest)
        #expect(fromEnvironment.channels.redisReadiness == .fail)
        var fromFile = SpoutConfiguration()
        try fromFile.apply(json: Data(#"{"channels":{"overflow":"drop-oldest"}}"#.utf8), source: "test.json")
        #expect(fromFile.channels.overflow == .dropOldest)
        #expect {
            try SpoutConfiguration.load(arguments: [], environment: ["SPOUT_CHANNELS_OVERFLOW": "drop_oldest"])
        } throws: { error in
            guard case .invalidValue(let key, _, let expected, _) = error as? ConfigError else { return false }
            return key == "channels.overflow" && expected == "one of disconnect, drop-oldest"
        }
    }

    @Test func environmentNamesFollowTheDottedKeys() {
        let names = Set(ConfigKey.all.map(\.environmentName))
        #expect(names.contains("SPOUT_PORT"))
        #expect(names.contains("SPOUT_EVENT_LOOPS"))
        #expect(names.contains("SPOUT_LIMITS_MAX_HEADER_BYTES"))
        #expect(names.contains("SPOUT_SEQUENCES_MAX_COUNT"))
        #expect(names.contains("SPOUT_UPSTREAM_BASE_URL"))
        #expect(names.contains("SPOUT_UPSTREAM_CACHE_TTL_SECONDS"))
    }

    @Test func upstreamURLHasAShortEnvironmentAlias() throws {
        let short = try SpoutConfiguration.load(arguments: [], environment: ["SPOUT_UPSTREAM_URL": "http://a.example"])
        #expect(short == .run(configured { $0.upstream.baseURL = "http://a.example" }))
        let both = try SpoutConfiguration.load(
            arguments: [],
            environment: ["SPOUT_UPSTREAM_URL": "http://a.example", "SPOUT_UPSTREAM_BASE_URL": "http://b.example"]
        )
        #expect(both == .run(configured { $0.upstream.baseURL = "http://b.example" }))
    }

    @Test(arguments: ["ftp://a.example", "not a url", "http://", "http://a.example/?x=1"])
    func badUpstreamURLNamesTheKey(value: String) {
        #expect {
            try SpoutConfiguration.load(arguments: ["--upstream", value], environment: [:])
        } throws: { error in
            guard case .invalidValue(let key, _, _, let source) = error as? ConfigError else { return false }
            return key == "upstream.baseURL" && source == "--upstream"
        }
    }

    private func configured(_ change: (inout SpoutConfiguration) -> Void) -> SpoutConfiguration {
        var configuration = SpoutConfiguration()
        change(&configuration)
        return configuration
    }

    @Test(arguments: [
        (["SPOUT_PORT": "abc"], "port", "\"abc\""),
        (["SPOUT_PORT": "70000"], "port", "\"70000\""),
        (["SPOUT_PORT": "-1"], "port", "\"-1\""),
        (["SPOUT_SSE_HEARTBEAT_SECONDS": "nan"], "sse.heartbeatSeconds", "\"nan\""),
        (["SPOUT_LOG_REQUESTS": "maybe"], "log.requests", "\"maybe\""),
        (["SPOUT_UPSTREAM_CACHE_MAX_BYTES": "-1"], "upstream.cacheMaxBytes", "\"-1\""),
        (
            ["SPOUT_UPSTREAM_CACHE_MAX_BYTES": "99999999999999999999"], "upstream.cacheMaxBytes",
            "\"99999999999999999999\""
        ),
    ])
    func badEnvironmentValueNamesTheKey(environment: [String: String], key: String, value: String) {
        #expect {
            try SpoutConfiguration.load(arguments: [], environment: environment)
        } throws: { error in
            guard case .invalidValue(let badKey, let badValue, _, _) = error as? ConfigError else { return false }
            return badKey == key && badValue == value
        }
    }

    @Test func badFileValuesAndUnknownKeysAreNamed() {
        var configuration = SpoutConfiguration()
        #expect(throws: ConfigError.unknownKey("prot", source: "test", suggestion: "port")) {
            try configuration.apply(json: Data(#"{"prot": 80}"#.utf8), source: "test")
        }
        #expect(throws: ConfigError.unknownKey("sse.heartbeat", source: "test", suggestion: nil)) {
            try configuration.apply(json: Data(#"{"sse": {"heartbeat": 1}}"#.utf8), source: "test")
        }
        #expect(
            throws: ConfigError.invalidJSON(
                path: "test",
                line: 1,
                column: 2,
                reason: "expected a member name in double quotes, got end of file"
            )
        ) {
            try configuration.apply(json: Data("{".utf8), source: "test")
        }
        #expect {
            try configuration.apply(json: Data(#"{"port": true}"#.utf8), source: "test")
        } throws: { error in
            (error as? ConfigError)?.description.contains("\"port\" must be an integer") == true
        }
        #expect {
            try configuration.apply(json: Data(#"{"port": 80.5}"#.utf8), source: "test")
        } throws: { error in
            if case .invalidValue(key: "port", value: _, expected: _, source: "test") = error as? ConfigError {
                return true
            }
            return false
        }
    }

    @Test func unknownFlagsAndMissingValuesAreRejected() throws {
        #expect(throws: ConfigError.invalidFlag("--nope", suggestion: nil)) {
            try SpoutConfiguration.load(arguments: ["--nope"], environment: [:])
        }
        #expect(throws: ConfigError.invalidFlag("--port", suggestion: nil)) {
            try SpoutConfiguration.load(arguments: ["--port"], environment: [:])
        }
        #expect(
            throws: ConfigError.unreadableFile(path: "/nonexistent/spout.json", reason: "no such file or not readable")
        ) {
            try SpoutConfiguration.load(arguments: ["--config", "/nonexistent/spout.json"], environment: [:])
        }
        #expect(try SpoutConfiguration.load(arguments: ["--help"], environment: [:]) == .help)
    }

    /// Strings that may be empty are one kind of key: a file's path among them says so in `--help`, the others are
    /// strings; each stores what it is given, an empty one included.
    @Test func textKeysNameWhatTheyHoldAndTakeEmptyValues() throws {
        let lines = ConfigKey.helpTable().split(separator: "\n").map(String.init)
        func typeOf(_ key: String) -> String? {
            lines.first { $0.hasPrefix("  \(key)  (") }?.components(separatedBy: ")  ").dropFirst().first
        }
        for key in ["tls.certificateFile", "tls.privateKeyFile", "channels.jwt.jwksFile"] {
            #expect(typeOf(key) == "file path (may be empty), default \"\"")
        }
        #expect(typeOf("channels.jwt.issuer") == "string (may be empty), default \"\"")
        let loaded = try SpoutConfiguration.load(
            arguments: [],
            environment: ["SPOUT_CHANNELS_JWT_JWKS_FILE": "/etc/spout/keys.json", "SPOUT_CHANNELS_JWT_ISSUER": ""]
        )
        guard case .run(let configuration) = loaded else {
            Issue.record("expected a configuration, got \(loaded)")
            return
        }
        #expect(configuration.channels.jwt.jwksFile == "/etc/spout/keys.json")
        #expect(configuration.channels.jwt.issuer == "")
    }
}
