import Foundation
import Testing

/// The layering of `docs/architecture.json` holds in the checkout: every file under `Sources/` imports only what
/// its module's entry allows, every target of `Package.swift` depends only on what it allows, and every module has
/// an entry. Then unit tests of the checker on synthetic input, so that a passing run means something.
@Suite struct ArchitectureTests {
    /// The package root: this file is `Tests/ArchitectureTests/ArchitectureTests.swift` under it.
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private static func rules() throws -> ImportRules {
        let data = try Data(contentsOf: root.appendingPathComponent("docs/architecture.json"))
        return try JSONDecoder().decode(ImportRules.self, from: data)
    }

    /// The module directories under `Sources/`.
    private static func sourceModules() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)
            .filter { !$0.hasPrefix(".") }.sorted()
    }

    /// The `.swift` files of one module, as paths relative to the root.
    private static func swiftFiles(of module: String) -> [String] {
        let directory = root.appendingPathComponent("Sources/\(module)")
        guard let walker = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted()
            .map { "Sources/\(module)/\($0)" }
    }

    // MARK: The checkout

    @Test func theRulesAreConsistent() throws {
        let rules = try Self.rules()
        #expect(rules.inconsistencies() == [])
    }

    @Test func everyModuleUnderSourcesHasAnEntryAndNoEntryIsStale() throws {
        let rules = try Self.rules()
        let modules = try Self.sourceModules()
        #expect(modules.count >= 10)  // the walk found the checkout
        #expect(modules.filter { rules.modules[$0] == nil } == [])
        #expect(rules.modules.keys.filter { !modules.contains($0) }.sorted() == [])
    }

    @Test func everySourceFileImportsOnlyWhatItsLayerAllows() throws {
        let rules = try Self.rules()
        var violations: [ImportRules.Violation] = []
        var files = 0
        for module in try Self.sourceModules() {
            for path in Self.swiftFiles(of: module) {
                let source = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
                violations += rules.violations(module: module, file: path, imports: SourceScan.imports(in: source))
                files += 1
            }
        }
        #expect(files >= 100)  // the walk found the sources
        #expect(violations.map(\.description) == [])
    }

    @Test func everyTargetOfThePackageDependsOnlyOnWhatItsLayerAllows() throws {
        let rules = try Self.rules()
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let targets = SourceScan.targets(inManifest: manifest).filter { $0.name != "TestSupport" }
        #expect(Set(targets.map(\.name)) == Set(try Self.sourceModules()))
        let violations = targets.flatMap { rules.violations(module: $0.name, dependencies: $0.dependencies) }
        #expect(violations.map(\.description) == [])
    }

    // MARK: The checker

    private static let synthetic = ImportRules(
        layers: ["base", "protocols"],
        modules: [
            "RESP": .init(layer: "base", imports: []),
            "Reactive": .init(layer: "base", imports: ["Foundation", "Dispatch"]),
            "EventLoops": .init(layer: "base", imports: ["Glibc", "Dispatch"]),
            "Redis": .init(layer: "protocols", imports: ["RESP", "EventLoops", "Reactive"]),
        ]
    )

    @Test func aForbiddenImportIsReportedWithItsFileAndWhatIsAllowed() {
        let source = """
            import Dispatch
            @preconcurrency import Foundation
            import struct FoundationNetworking.URLRequest
            """
        let violations = Self.synthetic.violations(
            module: "Reactive",
            file: "Sources/Reactive/X.swift",
            imports: SourceScan.imports(in: source)
        )
        #expect(
            violations.map(\.description) == [
                "Sources/Reactive/X.swift: Reactive (base) may not import FoundationNetworking; it may import "
                    + "Foundation, Dispatch"
            ]
        )
        let resp = Self.synthetic.violations(module: "RESP", file: "Sources/RESP/Y.swift", imports: ["Foundation"])
        #expect(
            resp.map(\.message) == ["RESP (base) may not import Foundation; it may import only the standard library"]
        )
    }

    @Test func aModuleWithoutAnEntryIsAViolation() {
        let violations = Self.synthetic.violations(module: "TLS", file: "Sources/TLS/Z.swift", imports: [])
        #expect(violations.map(\.message) == ["module TLS is not in docs/architecture.json"])
    }

    @Test func anImportOfTheSameOrAHigherLayerIsAnInconsistency() {
        let upward = ImportRules(
            layers: ["base", "protocols"],
            modules: [
                "EventLoops": .init(layer: "base", imports: ["Redis"]),
                "RESP": .init(layer: "base", imports: ["EventLoops"]),
                "Redis": .init(layer: "protocols", imports: ["EventLoops"]),
            ]
        )
        #expect(
            upward.inconsistencies(location: "rules").map(\.description) == [
                "rules: EventLoops (base) may not import Redis (protocols): only modules of a lower layer",
                "rules: RESP (base) may not import EventLoops (base): only modules of a lower layer",
            ]
        )
        #expect(Self.synthetic.inconsistencies() == [])
    }

    @Test func aTargetDependencyTheLayerDoesNotAllowIsReported() {
        let manifest = """
            .target(name: "RESP", swiftSettings: strictSettings),
            .testTarget(name: "RESPTests", dependencies: ["RESP", "HTTPServer"]),
            .target(
                name: "Redis",
                dependencies: ["RESP", "HTTPServer", "Reactive"],
                swiftSettings: strictSettings
            ),
            """
        let targets = SourceScan.targets(inManifest: manifest)
        #expect(
            targets == [
                .init(name: "RESP", dependencies: []),
                .init(name: "Redis", dependencies: ["RESP", "HTTPServer", "Reactive"]),
            ]
        )
        let violations = targets.flatMap { Self.synthetic.violations(module: $0.name, dependencies: $0.dependencies) }
        #expect(violations.map(\.location) == ["Package.swift (target Redis)"])
        #expect(violations.first?.message.hasPrefix("Redis (protocols) may not import HTTPServer") == true)
    }

    @Test func importsAreReadInTheirForms() {
        let source = """
            import Glibc
            @testable import EventLoops
            public import RESP
            import enum Dispatch.DispatchTimeoutResult
            /* import Hidden
               import AlsoHidden */
            // import Commented
            #if canImport(Darwin)
                import Darwin
            #endif
            let text = "import NotAnImport"
            import Glibc
            """
        #expect(SourceScan.imports(in: source) == ["Glibc", "EventLoops", "RESP", "Dispatch", "Darwin"])
    }
}
