import Foundation
import TestSupport
import Testing

/// The browser client's TypeScript declarations (`Sources/Spout/Client/spout.d.ts`, served at `/client/spout.d.ts`)
/// checked by a real TypeScript compiler, `tsc` (Debian's `node-typescript`): a program that uses the whole API as
/// docs/CLIENT.md describes it type-checks under `--strict`, wrong uses are refused with the error a user would see,
/// and the functions the declarations export are the ones `spout.js` exports (tsc reads them from the module).
/// Skipped without `tsc` unless `SPOUT_REQUIRE_TYPESCRIPT` is set (CI sets it).
@Suite(.offPool) struct ClientTypeScriptTests {
    static let clientDirectory = ClientRoutesTests.clientDirectory

    static var isRequired: Bool {
        let value = ProcessInfo.processInfo.environment["SPOUT_REQUIRE_TYPESCRIPT"] ?? ""
        return !value.isEmpty && value != "0"
    }

    static var testsEnabled: Bool { isRequired || TestCertificates.executable("tsc") != nil }

    /// A program as docs/CLIENT.md shows it: every option, every message kind narrowed by `kind`, `matches`.
    static let goodUse = #"""
        import { subscribe, matches, SpoutMessage, SpoutStatus, SpoutOptions } from "./spout.js";

        const seen: string[] = [];
        const options: SpoutOptions = {
            baseURL: "https://spout.example/",
            withCredentials: true,
            token: "t",
            presence: true,
            params: { client: "ada", n: 1, flag: false },
            shared: false,
            onStatus: (status: SpoutStatus) => {
                if (status.connected && status.state === "open" && !status.leader) seen.push(status.error ?? "");
            },
        };
        const unsubscribe: () => void = subscribe(["chat.42", "doc.7", "news.*"], (message: SpoutMessage) => {
            switch (message.kind) {
                case "event":
                    seen.push(`${message.channel} ${message.id} ${message.event} ${String(message.data)}`);
                    break;
                case "reset":
                    seen.push(`${message.channel} ${message.reason} ${message.oldest ?? "none"}`);
                    break;
                case "gap":
                    seen.push(`${message.channel} ${message.missed + 1} ${message.after ?? "none"}`);
                    break;
                case "join":
                case "leave":
                    seen.push(`${message.channel} ${message.client}`);
                    break;
            }
        }, options);
        subscribe("one", () => {});
        subscribe(new Set(["a", "b"]), () => {}, {});
        const yes: boolean = matches("news.*", "news.sport");
        unsubscribe();
        export { seen, yes };
        """#

    /// Wrong uses, each with the error tsc must give for it.
    static let wrongUses: [(name: String, source: String, error: String)] = [
        ("channel-number", #"subscribe(42, () => {});"#, "TS2345"),
        ("data-without-narrowing", #"subscribe("a", (m) => { console.log(m.data); });"#, "TS2339"),
        ("misspelt-option", #"subscribe("a", () => {}, { baseUrl: "https://spout.example/" });"#, "TS2345"),
        ("shared-as-string", #"subscribe("a", () => {}, { shared: "yes" });"#, "TS2322"),
        (
            "missed-as-string",
            #"subscribe("a", (m) => { if (m.kind === "gap") { const s: string = m.missed; } });"#, "TS2322"
        ),
        (
            "unknown-state",
            #"subscribe("a", () => {}, { onStatus: (s) => { if (s.state === "offline") {} } });"#, "TS2367"
        ),
        ("result-not-a-promise", #"subscribe("a", () => {}).then(() => {});"#, "TS2339"),
    ]

    @Test(.enabled(if: testsEnabled))
    func aProgramUsingTheWholeAPITypeChecksUnderStrict() throws {
        let directory = try Self.workspace()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.goodUse.write(to: directory.appendingPathComponent("app.ts"), atomically: true, encoding: .utf8)
        let result = try Self.tsc(["app.ts"], in: directory)
        #expect(result.status == 0, "tsc: \(result.output)")
        #expect(result.output.isEmpty)
    }

    @Test(.enabled(if: testsEnabled), arguments: wrongUses.map(\.name))
    func aWrongUseIsRefused(name: String) throws {
        let wrong = try #require(Self.wrongUses.first { $0.name == name })
        let directory = try Self.workspace()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = #"import { subscribe } from "./spout.js";"# + "\n" + wrong.source + "\n"
        try source.write(to: directory.appendingPathComponent("wrong.ts"), atomically: true, encoding: .utf8)
        let result = try Self.tsc(["wrong.ts"], in: directory)
        #expect(result.status != 0)
        #expect(result.output.contains("wrong.ts(2,"), "the error is on the wrong line: \(result.output)")
        #expect(result.output.contains("error \(wrong.error):"), "tsc: \(result.output)")
    }

    /// tsc reads `spout.js` itself (`--allowJs`) and writes the declarations it infers: the functions it exports are
    /// the ones spout.d.ts declares, so the declarations cannot name a function the module lacks, or miss one.
    @Test(.enabled(if: testsEnabled))
    func theDeclarationsExportTheFunctionsTheModuleExports() throws {
        let directory = try Self.workspace()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try Self.tsc(
            ["--allowJs", "--declaration", "--emitDeclarationOnly", "--outDir", "inferred", "spout.js"],
            in: directory
        )
        #expect(result.status == 0, "tsc: \(result.output)")
        let inferred = try String(
            contentsOf: directory.appendingPathComponent("inferred/spout.d.ts"),
            encoding: .utf8
        )
        let declared = try String(contentsOf: directory.appendingPathComponent("spout.d.ts"), encoding: .utf8)
        let inferredNames = Self.exportedFunctions(inferred)
        #expect(inferredNames == ["matches", "subscribe"])
        #expect(Self.exportedFunctions(declared) == inferredNames)
    }

    /// The names of `export function NAME(` declarations in `text`, sorted.
    static func exportedFunctions(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("export function ") else { return nil }
            let rest = line.dropFirst("export function ".count)
            return String(rest.prefix { $0 != "(" && $0 != "<" })
        }.sorted()
    }

    /// A temporary directory holding copies of spout.js and spout.d.ts, as a user would put them beside their code.
    static func workspace() throws -> URL {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("spout-tsc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for file in ["spout.js", "spout.d.ts"] {
            try FileManager.default.copyItem(
                at: clientDirectory.appendingPathComponent(file),
                to: directory.appendingPathComponent(file)
            )
        }
        return directory
    }

    /// Runs tsc in `directory` with strict checking for a browser ES module: its exit status (-1 when it did not end
    /// in time) and what it printed.
    static func tsc(_ arguments: [String], in directory: URL) throws -> (status: Int32, output: String) {
        let tsc = try #require(TestCertificates.executable("tsc"), "tsc (Debian node-typescript) is not installed")
        let process = try ChildProcess(
            executable: tsc,
            arguments: [
                "--strict", "--noEmitOnError", "--target", "es2020", "--module", "es2020", "--moduleResolution", "node",
                "--lib", "es2020,dom", "--pretty", "false",
            ] + (arguments.contains("--emitDeclarationOnly") ? [] : ["--noEmit"]) + arguments,
            workingDirectory: directory.path,
            standardOutput: .pipe,
            standardError: .standardOutput
        )
        let output = try process.readStandardOutput(timeout: .seconds(120))
        let status = process.wait(timeout: .seconds(10))?.exitStatus ?? -1
        return (status, String(decoding: output, as: UTF8.self))
    }
}
