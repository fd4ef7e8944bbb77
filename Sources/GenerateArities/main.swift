import Foundation

// Writes `Publishers.Merge` and `Merge3`…`Merge8`, the fixed-arity merges of Combine's API, from one template.
//
// Their logic is one subscription (`FlatMapInner`, shared with `flatMap` and `MergeMany`); what differs between
// arities is only the declaration Combine gives each: the generic parameters, the `a`…`h` properties, the
// initializer, `Publisher.merge(with:…)`, and the `merge(with:…)` methods that add publishers to a merge and give
// one flat merge of the larger arity. Written out by hand, those were forty lines again for each arity; the
// `ReactiveArities` build plugin runs this tool and compiles what it writes into `Reactive`.
//
// Usage: GenerateArities <output file>

/// The arities generated, as Combine has them.
let arities = 2...8

/// The properties of a merge of `n`, which name its generic parameters too (`a: A`, `b: B`, …).
func letters(_ n: Int) -> [String] { (0..<n).map { String(UnicodeScalar(UInt8(ascii: "a") + UInt8($0))) } }

/// The generic parameters of the publishers a `merge(with:…)` method adds, when it adds more than one.
let addedNames = ["Z", "Y", "X", "W", "V", "U"]

let numberWords = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight"]
/// How the doc comment of each property names its publisher, first to eighth.
let ordinals = ["A", "A second", "A third", "A fourth", "A fifth", "A sixth", "A seventh", "An eighth"]

/// `Merge` for two publishers, `MergeN` otherwise.
func typeName(_ n: Int) -> String { n == 2 ? "Merge" : "Merge\(n)" }

/// `Just(first), …, Just(last)`.
func justs(_ range: ClosedRange<Int>) -> String { range.map { "Just(\($0))" }.joined(separator: ", ") }

/// The last line of a doc example merging the values 1 through `n`.
func prints(_ n: Int) -> String { "    // Prints: \((1...n).map(String.init).joined(separator: " ")) (one per line)" }

/// `lines` as doc comment lines.
func doc(_ lines: [String]) -> [String] { lines.map { $0.isEmpty ? "///" : "/// \($0)" } }

/// `lines` indented by four spaces (empty lines stay empty).
func indent(_ lines: [String]) -> [String] {
    lines.map { $0.isEmpty ? "" : "    " + $0 }
}

/// A generic signature's requirements that each of `names` publish `output` and fail with `failure`, ending with the
/// body's opening brace: on one line for one name, one line each for more.
func sameElements(_ names: [String], output: String = "Output", failure: String = "Failure") -> [String] {
    let requirements = names.map { "\(failure) == \($0).Failure, \(output) == \($0).Output" }
    if requirements.count == 1 { return ["where \(requirements[0]) {"] }
    return ["where"] + indent(requirements.dropLast().map { $0 + "," } + [requirements.last!]) + ["{"]
}

/// A function's head: its name and generic parameters (each a `Publisher`), its labelled parameters one a line, and
/// its result type.
func signature(_ name: String, generics: [String], parameters: [String], result: String) -> [String] {
    let labelled = parameters.enumerated().map { index, parameter in
        (index == 0 ? "with " : "_ ") + parameter + (index == parameters.count - 1 ? "" : ",")
    }
    let genericList = generics.map { "\($0): Publisher" }.joined(separator: ", ")
    return ["public func \(name)<\(genericList)>("] + indent(labelled) + [") -> \(result)"]
}

/// A declaration's head with its generic parameters on its line, or one a line when that would pass 120 columns at
/// the type's indentation (as `swift format` lays it out).
func genericHead(_ head: String, _ parameters: [String], tail: String) -> [String] {
    let line = "\(head)<\(parameters.joined(separator: ", "))>\(tail)"
    if line.count + 4 <= 120 { return [line] }
    return ["\(head)<"] + indent(parameters.dropLast().map { $0 + "," } + [parameters.last!]) + [">\(tail)"]
}

/// `Publisher.merge(with:…)`, giving a merge of `self` and `n - 1` others.
func publisherExtension(_ n: Int) -> [String] {
    // Combine names the one other publisher of `merge(with:)` `other: P`, and the others `b: B`, `c: C`, ….
    let others = n == 2 ? ["other"] : Array(letters(n).dropFirst())
    let types = n == 2 ? ["P"] : others.map { $0.uppercased() }
    let text: [String]
    if n == 2 {
        text = [
            "Combines elements from this publisher with those from another publisher, delivering an",
            "interleaved sequence of elements.",
            "",
            "Elements are delivered one at a time, in the order they arrive, as downstream demand allows;",
            "while demand is `.unlimited` every upstream is asked for `.unlimited`, otherwise each is asked",
            "for one element at a time. The merged publisher finishes when every upstream finished, and",
            "fails on the first failure, cancelling the others.",
            "",
            "    let a = PassthroughSubject<Int, Never>(), b = PassthroughSubject<Int, Never>()",
            "    let cancellable = a.merge(with: b).sink { print($0) }",
            "    a.send(1); b.send(2); a.send(3)  // Prints: 1 2 3 (one per line)",
            "",
            "- Parameter other: Another publisher.",
            "- Returns: A publisher that emits an event when either upstream publisher emits an event.",
        ]
    } else {
        text = [
            "Combines elements from this publisher with those from \(numberWords[n - 1]) other publishers, delivering",
            "an interleaved sequence of elements.",
            "",
            "    let merged = Just(1).merge(with: \(justs(2...n)))",
            "    let cancellable = merged.sink { print($0) }",
            prints(n),
            "",
            "- Returns: A publisher that emits an event when any upstream publisher emits an event.",
        ]
    }
    let result = "Publishers.\(typeName(n))<Self, \(types.joined(separator: ", "))>"
    let parameters = zip(others, types).map { "\($0): \($1)" }
    let function =
        doc(text) + signature("merge", generics: types, parameters: parameters, result: result)
        + sameElements(types) + indent(["Publishers.\(typeName(n))(self, \(others.joined(separator: ", ")))"]) + ["}"]
    return ["extension Publisher {"] + indent(function) + ["}"]
}

/// The `merge(with:…)` method of a merge of `n` that adds `added` publishers.
func addingMethod(_ n: Int, adding added: Int) -> [String] {
    let names = letters(n)
    let total = n + added
    let addedTypes = added == 1 ? ["P"] : Array(addedNames.prefix(added))
    let addedValues = added == 1 ? ["other"] : addedTypes.map { $0.lowercased() }
    let result =
        "Publishers.\(typeName(total))<\((names.map { $0.uppercased() } + addedTypes).joined(separator: ", "))>"
    let what = added == 1 ? "another publisher" : "\(numberWords[added]) more publishers"
    let text = [
        "Adds \(what) to this merge, giving one flat `\(typeName(total))` rather than a nested merge.",
        "",
        "    let merged = Just(1).merge(with: \(justs(2...n)))",
        "        .merge(with: \(justs(n + 1...total)))  // a \(typeName(total))",
        "    let cancellable = merged.sink { print($0) }",
        prints(total),
    ]
    let parameters = zip(addedValues, addedTypes).map { "\($0): \($1)" }
    return doc(text) + signature("merge", generics: addedTypes, parameters: parameters, result: result)
        + sameElements(addedTypes)
        + indent(["Publishers.\(typeName(total))(\((names + addedValues).joined(separator: ", ")))"]) + ["}"]
}

/// `Publishers.Merge` (for `n == 2`) or `Publishers.MergeN`, and its `Equatable` conformance.
func mergeType(_ n: Int) -> [String] {
    let names = letters(n)
    let types = names.map { $0.uppercased() }
    let properties = names.enumerated().flatMap { index, name in
        doc(["\(ordinals[index]) publisher to merge."])
            + ["public let \(name): \(name.uppercased())", ""]
    }
    let initializer =
        doc(["Creates a publisher created by applying the merge function to \(numberWords[n]) upstream publishers."])
        + ["public init(\(zip(names, types).map { "_ \($0): \($1)" }.joined(separator: ", "))) {"]
        + indent(names.map { "self.\($0) = \($0)" }) + ["}"]
    let receive =
        ["public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {"]
        + indent(
            [
                "let inner = FlatMapInner(downstream: subscriber, maxPublishers: .unlimited, name: \"Merge\")",
                "subscriber.receive(subscription: inner)",
            ] + names.map { "inner.addChild(\($0))" } + ["inner.outerCompleted(.finished)"]
        ) + ["}"]
    let adding = (1..<(9 - n)).flatMap { [""] + addingMethod(n, adding: $0) }
    let body =
        ["public typealias Output = A.Output", "public typealias Failure = A.Failure", ""] + properties + initializer
        + [""] + receive + adding
    let type =
        doc([
            "A publisher created by applying the merge function to \(numberWords[n]) upstream publishers.",
            "",
            "**Ownership:** a value type; each subscription retains its subscriber and the upstream",
            "subscriptions until it completes or is cancelled.",
            "",
            "**Thread safety:** safe to subscribe from any thread; deliveries are serialized.",
        ])
        + genericHead("public struct \(typeName(n))", types.map { "\($0): Publisher" }, tail: ": Publisher")
        + sameElements(Array(types.dropFirst()), output: "A.Output", failure: "A.Failure") + indent(body) + ["}"]
    return ["extension Publishers {"] + indent(type) + ["}", ""]
        + [
            "extension Publishers.\(typeName(n)): Equatable",
            "where \(types.map { "\($0): Equatable" }.joined(separator: ", ")) {}",
        ]
}

let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: GenerateArities <output file>\n".utf8))
    exit(2)
}
let header = [
    "// Generated at build time by Sources/GenerateArities (run by the ReactiveArities build plugin): edit that, not this.",
    "",
]
let lines = header + arities.flatMap { publisherExtension($0) + [""] + mergeType($0) + [""] }
do {
    try lines.joined(separator: "\n").write(toFile: arguments[1], atomically: true, encoding: .utf8)
} catch {
    FileHandle.standardError.write(Data("GenerateArities: cannot write \(arguments[1]): \(error)\n".utf8))
    exit(1)
}
