import Foundation

/// The layering rules of `docs/architecture.json`: each module's layer and the modules (the package's own and the
/// system's) its files may import.
///
/// **Ownership:** A value, decoded from the rules file.
///
/// **Thread safety:** Value type; immutable once decoded.
struct ImportRules: Decodable, Sendable {
    /// One module's entry.
    struct Module: Decodable, Sendable {
        /// The name of its layer, one of ``ImportRules/layers``.
        let layer: String
        /// The modules its files may import.
        let imports: [String]
    }

    /// The layers, lowest first.
    let layers: [String]
    /// The modules by name.
    let modules: [String: Module]

    /// An import, or a target dependency, that the rules do not allow; or an inconsistency of the rules themselves.
    struct Violation: Equatable, Sendable, CustomStringConvertible {
        /// Where: a file's path, `Package.swift` or the rules file.
        let location: String
        /// What is wrong.
        let message: String

        var description: String { "\(location): \(message)" }
    }

    /// The rank of `layer`, lowest 0; nil for an unknown layer.
    func rank(of layer: String) -> Int? { layers.firstIndex(of: layer) }

    /// Checks the rules themselves: every layer is known, and a module imports the package's own modules only from
    /// a lower layer (so the layers, and the dependencies, have no cycle).
    func inconsistencies(location: String = "docs/architecture.json") -> [Violation] {
        var found: [Violation] = []
        for (name, module) in modules.sorted(by: { $0.key < $1.key }) {
            guard let rank = rank(of: module.layer) else {
                found.append(Violation(location: location, message: "\(name) is in unknown layer \(module.layer)"))
                continue
            }
            for imported in module.imports {
                guard let other = modules[imported] else { continue }  // a system module
                guard let otherRank = self.rank(of: other.layer), otherRank < rank else {
                    found.append(
                        Violation(
                            location: location,
                            message: "\(name) (\(module.layer)) may not import \(imported) (\(other.layer)): "
                                + "only modules of a lower layer"
                        )
                    )
                    continue
                }
            }
        }
        return found
    }

    /// The imports of `file` (a source file of `module`) that the rules do not allow.
    func violations(module: String, file: String, imports: [String]) -> [Violation] {
        guard let allowed = modules[module] else {
            return [Violation(location: file, message: "module \(module) is not in docs/architecture.json")]
        }
        return imports.filter { !allowed.imports.contains($0) }.map { imported in
            Violation(
                location: file,
                message: "\(module) (\(allowed.layer)) may not import \(imported); it may import "
                    + (allowed.imports.isEmpty ? "only the standard library" : allowed.imports.joined(separator: ", "))
            )
        }
    }

    /// The dependencies of the target `module` in Package.swift that the rules do not allow.
    func violations(module: String, dependencies: [String]) -> [Violation] {
        violations(module: module, file: "Package.swift (target \(module))", imports: dependencies)
    }
}

/// Reading imports out of Swift source, and targets out of `Package.swift`, without a Swift parser: enough for the
/// forms this package uses.
enum SourceScan {
    /// The modules `source` imports: `import M`, `@testable import M`, `public import M`, `import struct M.T`, ...
    /// (each once, in order of first appearance). Lines inside block comments are skipped; an import under
    /// `#if canImport(M)` counts, since a build on that platform compiles it.
    static func imports(in source: String) -> [String] {
        var modules: [String] = []
        var inBlockComment = false
        for rawLine in source.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = Substring(rawLine)
            if inBlockComment {
                guard let end = line.range(of: "*/") else { continue }
                line = line[end.upperBound...]
                inBlockComment = false
            }
            if let start = line.range(of: "/*"), line.range(of: "*/", range: start.upperBound..<line.endIndex) == nil {
                inBlockComment = true
                line = line[..<start.lowerBound]
            }
            var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
            while let first = words.first, first.hasPrefix("@") || accessModifiers.contains(String(first)) {
                words = words.dropFirst()
            }
            guard words.first == "import", words.count >= 2 else { continue }
            words = words.dropFirst()
            if let kind = words.first, declarationKinds.contains(String(kind)), words.count >= 2 {
                words = words.dropFirst()
            }
            guard let path = words.first else { continue }
            let module = String(path.prefix(while: { $0 != "." && $0 != ";" }))
            if !module.isEmpty && !modules.contains(module) { modules.append(module) }
        }
        return modules
    }

    private static let accessModifiers: Set<String> = ["public", "package", "internal", "fileprivate", "private"]
    private static let declarationKinds: Set<String> = [
        "class", "struct", "enum", "protocol", "typealias", "func", "var", "let",
    ]

    /// A non-test target of `Package.swift`: its name and the names of its dependencies.
    struct Target: Equatable {
        let name: String
        let dependencies: [String]
    }

    /// The `.target(...)` and `.executableTarget(...)` entries of a manifest (test targets left out), with the
    /// string names in their `dependencies:` list.
    static func targets(inManifest manifest: String) -> [Target] {
        var found: [Target] = []
        for opener in [".target(", ".executableTarget("] {
            var searchStart = manifest.startIndex
            while let open = manifest.range(of: opener, range: searchStart..<manifest.endIndex) {
                let body = balanced(manifest, from: open.upperBound)
                searchStart = body.endIndex
                let text = String(body)
                guard let name = quoted(after: "name:", in: text) else { continue }
                var dependencies: [String] = []
                if let list = text.range(of: "dependencies:"),
                    let start = text.range(of: "[", range: list.upperBound..<text.endIndex)
                {
                    let inner = balanced(text, from: start.upperBound, open: "[", close: "]")
                    dependencies = strings(in: String(inner))
                }
                found.append(Target(name: name, dependencies: dependencies))
            }
        }
        return found.sorted { $0.name < $1.name }
    }

    /// The text from `start` up to the bracket that closes the one just before it.
    private static func balanced(
        _ text: String,
        from start: String.Index,
        open: Character = "(",
        close: Character = ")"
    ) -> Substring {
        var depth = 1
        var index = start
        while index < text.endIndex {
            if text[index] == open { depth += 1 }
            if text[index] == close {
                depth -= 1
                if depth == 0 { return text[start..<index] }
            }
            index = text.index(after: index)
        }
        return text[start...]
    }

    /// The first string literal after `label` in `text`.
    private static func quoted(after label: String, in text: String) -> String? {
        guard let labelRange = text.range(of: label) else { return nil }
        return strings(in: String(text[labelRange.upperBound...])).first
    }

    /// The contents of the string literals in `text`, in order.
    private static func strings(in text: String) -> [String] {
        text.split(separator: "\"", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }
}
