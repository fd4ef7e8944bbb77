import Foundation
import Testing

@testable import Spout

@Suite struct ConfigJSONTests {
    @Test func parsesObjectsInOrderWithEveryKindOfValue() throws {
        let text = #"{"b": [1, -2.5e3, "x\n\u00e9\ud83d\ude00"], "a": {"t": true, "f": false, "n": null}}"#
        let value = try ConfigJSON.parse(Array(text.utf8))
        #expect(
            value
                == .object([
                    (
                        "b",
                        .array([.number(text: "1", value: 1), .number(text: "-2.5e3", value: -2500), .string("x\né😀")])
                    ),
                    ("a", .object([("t", .boolean(true)), ("f", .boolean(false)), ("n", .null)])),
                ])
        )
    }

    @Test(
        arguments: [
            ("{\n  \"port\": 8081,\n}", 3, 1, "trailing comma before \"}\""),
            ("{\"a\": [1, 2,]}", 1, 13, "trailing comma before \"]\""),
            ("{\n\"port\": 1,\n\"port\": 2}", 3, 1, "duplicate key \"port\""),
            ("{\"port\": 08}", 1, 10, "a number with a leading zero"),
            ("{\"port\" 8}", 1, 9, "expected \":\" after the member name, got \"8\""),
            ("{'port': 8}", 1, 2, "expected a member name in double quotes, got \"'\""),
            ("{\"port\": 8} x", 1, 13, "unexpected \"x\" after the document"),
            ("{\"a\": \"tab\there\"}", 1, 11, "a control character inside a string (escape it)"),
            ("{\"a\": \"\\x\"}", 1, 9, "an unknown escape \\\"x\""),
            ("{\"é\": tru}", 1, 7, "expected a value, got \"t\""),
            ("{\"a\": // comment\n1}", 1, 7, "expected a value, got \"/\""),
            ("", 1, 1, "expected a value, got end of file"),
            ("{\"a\": 1 2}", 1, 9, "expected \",\" or \"}\", got \"2\""),
            ("{\"a\": 1", 1, 8, "expected \",\" or \"}\", got end of file"),
            ("[1 2]", 1, 4, "expected \",\" or \"]\", got \"2\""),
            ("[1", 1, 3, "expected \",\" or \"]\", got end of file"),
            ("{\"a\": \"\\ud800\"}", 1, 14, "a lone surrogate \\ud800"),
        ] as [(String, Int, Int, String)]
    )
    func syntaxErrorsNameLineAndColumn(text: String, line: Int, column: Int, reason: String) {
        #expect(throws: ConfigJSON.SyntaxError(line: line, column: column, reason: reason)) {
            try ConfigJSON.parse(Array(text.utf8))
        }
    }

    @Test func deepNestingIsRefusedNotRecursedInto() {
        let text = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: ConfigJSON.SyntaxError.self) { try ConfigJSON.parse(Array(text.utf8)) }
    }

    @Test func aByteOrderMarkIsAllowed() throws {
        #expect(try ConfigJSON.parse([0xEF, 0xBB, 0xBF] + Array("{}".utf8)) == .object([]))
    }
}

@Suite struct ConfigDiagnosticsTests {
    private static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private func fileError(_ json: String) -> String? {
        var configuration = SpoutConfiguration()
        do {
            try configuration.apply(json: Data(json.utf8), source: "spout.json")
            return nil
        } catch {
            return error.description
        }
    }

    @Test(arguments: [
        (
            #"{"port": "8081"}"#,
            #"configuration key "port" must be an integer in 0...65535, got a string "8081" (from spout.json)"#
        ),
        (
            #"{"port": 80.5}"#,
            #"configuration key "port" must be an integer in 0...65535, got a number 80.5 (from spout.json)"#
        ),
        (
            #"{"port": true}"#,
            #"configuration key "port" must be an integer in 0...65535, got a boolean true (from spout.json)"#
        ),
        (
            #"{"log": {"requests": "yes"}}"#,
            #"configuration key "log.requests" must be true or false, got a string "yes" (from spout.json)"#
        ),
        (#"{"host": 127}"#, #"configuration key "host" must be a string, got a number 127 (from spout.json)"#),
        (
            #"{"cors": {"allowedOrigins": "*"}}"#,
            #"configuration key "cors.allowedOrigins" must be a non-empty array of non-empty strings, got a string "*" (from spout.json)"#
        ),
        (
            #"{"cors": {"allowedOrigins": [1]}}"#,
            #"configuration key "cors.allowedOrigins" must be a non-empty array of non-empty strings, got an array holding a number 1 (from spout.json)"#
        ),
        (#"{"sse": 5}"#, #"configuration key "sse" must be an object, got a number 5 (from spout.json)"#),
        (#"{"port": null}"#, #"configuration key "port" must be an integer in 0...65535, got null (from spout.json)"#),
        (
            #"{"log": {"level": "verbose"}}"#,
            #"configuration key "log.level" must be one of debug, info, warn, error, got "verbose" (from spout.json)"#
        ),
        (
            #"{"shutdown": {"delaySecond": 5}}"#,
            #"unknown configuration key "shutdown.delaySecond" in spout.json; did you mean "shutdown.delaySeconds"?"#
        ),
        (#"{"Port": 5}"#, #"unknown configuration key "Port" in spout.json; did you mean "port"?"#),
        (#"{"colour": 5}"#, #"unknown configuration key "colour" in spout.json"#),
        ("[1]", "configuration file spout.json is not a JSON object: the top level must be an object, got an array"),
        (
            "{\n  \"port\": 8081,\n}\n",
            "configuration file spout.json is not valid JSON: line 3, column 1: trailing comma before \"}\""
        ),
    ])
    func fileMistakesSayWhatTheyGot(json: String, message: String) {
        #expect(fileError(json) == message)
    }

    @Test func integersMayBeWrittenAsIntegralNumbersAndBigOnesStayExact() throws {
        var configuration = SpoutConfiguration()
        try configuration.apply(
            json: Data(#"{"port": 80.0, "upstream": {"cacheMaxBytes": 1099511627775}}"#.utf8),
            source: "t"
        )
        #expect(configuration.port == 80)
        #expect(configuration.upstream.cacheMaxBytes == 1_099_511_627_775)
    }

    @Test func newKeysLoadFromEveryLayer() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("spout-\(UUID().uuidString).json")
        try Data(#"{"shutdown": {"delaySeconds": 1.5}, "log": {"level": "warn", "redactQueryParameters": []}}"#.utf8)
            .write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        guard
            case .run(let fromFile) = try SpoutConfiguration.load(arguments: ["--config", file.path], environment: [:])
        else {
            Issue.record("expected run")
            return
        }
        #expect(fromFile.shutdown.delaySeconds == 1.5)
        #expect(fromFile.log.level == .warn)
        #expect(fromFile.log.redactQueryParameters == [])
        guard
            case .run(let layered) = try SpoutConfiguration.load(
                arguments: ["--log-level", "debug"],
                environment: [
                    "SPOUT_CONFIG": file.path, "SPOUT_LOG_REDACT_QUERY_PARAMETERS": "sig, Token",
                    "SPOUT_LOG_SELF_CALLS": "on",
                ]
            )
        else {
            Issue.record("expected run")
            return
        }
        #expect(layered.log.level == .debug)
        #expect(layered.log.redactQueryParameters == ["sig", "Token"])
        #expect(layered.log.selfCalls)
        #expect(layered.shutdown.delaySeconds == 1.5)
        #expect(try SpoutConfiguration.load(arguments: ["--version"], environment: [:]) == .version)
    }

    @Test func unknownEnvironmentVariablesAreReportedWithTheClosestName() {
        let warnings = SpoutConfiguration.unknownEnvironmentVariables(in: [
            "SPOUT_PROT": "8080",
            "SPOUT_SHUTDOWN_DELAY_SECOND": "1",
            "SPOUT_UPSTREAM_URL": "http://a.example",  // an alias: known
            "SPOUT_CONFIG": "/etc/spout.json",  // known
            "SPOUT_PORT": "1",  // known
            "SPOUT_COMPLETELY_DIFFERENT": "x",
            "HOME": "/root",  // not ours
        ])
        #expect(
            warnings == [
                ConfigWarning(variable: "SPOUT_COMPLETELY_DIFFERENT", suggestion: nil),
                ConfigWarning(variable: "SPOUT_PROT", suggestion: "SPOUT_PORT"),
                ConfigWarning(variable: "SPOUT_SHUTDOWN_DELAY_SECOND", suggestion: "SPOUT_SHUTDOWN_DELAY_SECONDS"),
            ]
        )
        #expect(
            warnings[1].description == "unknown environment variable SPOUT_PROT is ignored; did you mean SPOUT_PORT?"
        )
    }

    @Test func unknownFlagsGetASuggestion() {
        #expect(throws: ConfigError.invalidFlag("--prot", suggestion: "--port")) {
            try SpoutConfiguration.load(arguments: ["--prot", "1"], environment: [:])
        }
    }

    @Test func editDistanceCountsInsertionsDeletionsSubstitutionsAndSwaps() {
        func distance(_ a: String, _ b: String) -> Int { Suggestion.editDistance(Array(a.utf8), Array(b.utf8)) }
        #expect(distance("port", "port") == 0)
        #expect(distance("prot", "port") == 1)
        #expect(distance("host", "hosts") == 1)
        #expect(distance("", "abc") == 3)
        #expect(distance("kitten", "sitting") == 3)
        #expect(Suggestion.closest(to: "zzzz", among: ["port", "host"]) == nil)
    }

    @Test func helpListsEveryKeyWithItsDefaultVariableAndMeaning() {
        let usage = SpoutConfiguration.usage
        for key in ConfigKey.all {
            #expect(ConfigKey.descriptions[key.name]?.isEmpty == false, "no description for \(key.name)")
            let line = usage.split(separator: "\n").first { $0.hasPrefix("  \(key.name)  (") }
            #expect(line?.contains(key.environmentName) == true, "\(key.name)")
            #expect(line?.contains("default \(key.defaultText)") == true, "\(key.name)")
        }
        #expect(usage.contains("  port  (SPOUT_PORT, --port)  integer 0...65535, default 8080\n      TCP port"))
        #expect(usage.contains("SPOUT_UPSTREAM_BASE_URL or SPOUT_UPSTREAM_URL, --upstream"))
        #expect(Set(ConfigKey.descriptions.keys) == Set(ConfigKey.all.map(\.name)))
    }

    @Test func theShippedFileAndTheConfigurationReferenceNameEveryKey() throws {
        let file = try String(
            contentsOf: Self.repositoryRoot.appendingPathComponent("config/spout.json"),
            encoding: .utf8
        )
        guard case .object(let root) = try ConfigJSON.parse(Array(file.utf8)) else {
            Issue.record("not an object")
            return
        }
        var names: Set<String> = []
        func collect(_ members: [(name: String, value: ConfigJSON)], prefix: String) {
            for (name, value) in members {
                let path = prefix.isEmpty ? name : "\(prefix).\(name)"
                if case .object(let nested) = value { collect(nested, prefix: path) } else { names.insert(path) }
            }
        }
        collect(root, prefix: "")
        #expect(names == Set(ConfigKey.all.map(\.name)))
        let reference = try String(
            contentsOf: Self.repositoryRoot.appendingPathComponent("docs/CONFIGURATION.md"),
            encoding: .utf8
        )
        for key in ConfigKey.all {
            let last = String(key.name.split(separator: ".").last!)
            #expect(
                reference.contains("`\(key.name)`") || reference.contains("`\(last)`"),
                "docs/CONFIGURATION.md lacks \(key.name)"
            )
        }
    }
}

@Suite struct CPUQuotaTests {
    /// A fresh directory under the temporary directory with `files` (relative path → contents) in it.
    private func fixture(_ files: [String: String]) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("cgroup-\(UUID().uuidString)").path
        for (path, contents) in files {
            let url = URL(fileURLWithPath: root + "/" + path)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data(contents.utf8).write(to: url)
        }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        return root
    }

    @Test(
        arguments: [
            ("200000 100000\n", 2.0),
            ("150000 100000", 1.5),
            ("50000 100000", 0.5),
            ("max 100000\n", nil),
            ("", nil),
            ("garbage", nil),
            ("-1 100000", nil),
            ("0 100000", nil),
            ("100000 0", nil),
            ("100000", nil),
            ("99999999999999999999 100000", nil),
        ] as [(String, Double?)]
    )
    func cpuMaxParses(text: String, cpus: Double?) {
        #expect(CPUQuota.parseCPUMax(text) == cpus)
    }

    @Test func cgroupV2QuotaCapsTheLoopsAndAParentLimitBinds() throws {
        let root = try fixture([
            "cpu.max": "max 100000\n",
            "kubepods/pod1/cpu.max": "max 100000\n",
            "kubepods/cpu.max": "250000 100000\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(CPUQuota.limit(root: root, selfCgroup: "0::/kubepods/pod1\n") == 2.5)
        #expect(CPUQuota.loopCount(available: 8, root: root, selfCgroup: "0::/kubepods/pod1\n") == 3)
        #expect(CPUQuota.loopCount(available: 2, root: root, selfCgroup: "0::/kubepods/pod1\n") == 2)
    }

    @Test func cgroupV2InsideItsOwnNamespaceReadsTheRoot() throws {
        let root = try fixture(["cpu.max": "50000 100000"])
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(CPUQuota.loopCount(available: 4, root: root, selfCgroup: "0::/\n") == 1)
    }

    @Test func cgroupV1QuotaAndPeriod() throws {
        let root = try fixture([
            "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "300000\n",
            "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
            "cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
            "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
        ])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let selfCgroup = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n"
        #expect(CPUQuota.limit(root: root, selfCgroup: selfCgroup) == 3)
        #expect(CPUQuota.loopCount(available: 16, root: root, selfCgroup: selfCgroup) == 3)
    }

    @Test func noLimitMissingFilesAndGarbageLeaveTheProcessorCount() throws {
        let root = try fixture([
            "cpu/cpu.cfs_quota_us": "-1\n",
            "cpu/cpu.cfs_period_us": "100000\n",
            "weird/cpu.max": "lots of cpus",
        ])
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(CPUQuota.loopCount(available: 6, root: root, selfCgroup: "3:cpu:/\n") == 6)
        #expect(CPUQuota.loopCount(available: 6, root: root, selfCgroup: "0::/weird\n") == 6)
        #expect(CPUQuota.loopCount(available: 6, root: root + "/missing", selfCgroup: "0::/\n") == 6)
        #expect(CPUQuota.loopCount(available: 6, root: root, selfCgroup: "not a cgroup file") == 6)
        #expect(CPUQuota.loopCount(available: 6, root: root, selfCgroup: "0::/../../etc\n") == 6)
        #expect(CPUQuota.loopCount(available: 0, root: root, selfCgroup: "") == 1)
        #expect(CPUQuota.parseV1(quota: "abc", period: "100000") == nil)
    }

    @Test func thisMachineGetsAtLeastOneLoopAndNoMoreThanItsProcessors() {
        let available = ProcessInfo.processInfo.activeProcessorCount
        let count = CPUQuota.loopCount(available: available)
        #expect((1...max(1, available)).contains(count))
    }
}
