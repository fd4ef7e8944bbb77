/// Reads and validates query parameters, turning every mistake into a `400` ``Problem`` that
/// names the parameter and shows what was sent.
///
/// Unknown parameters are rejected too: a typo such as `cout=5` must not silently turn a short
/// stream into an endless one.
///
/// **Thread safety:** value type; not shared.
public struct QueryParameters: Sendable {
    private var values: [String: String] = [:]

    /// Collects `items`, rejecting names outside `known` and names given more than once.
    public init(_ items: [(name: String, value: String)], known: Set<String>) throws(Problem) {
        for (name, value) in items {
            guard known.contains(name) else {
                let list = known.sorted().joined(separator: ", ")
                throw .invalidParameter(name, "unknown parameter \"\(Self.clip(name))\"; known parameters: \(list)")
            }
            guard values[name] == nil else {
                throw .invalidParameter(name, "\(name) must be given at most once")
            }
            values[name] = value
        }
    }

    /// The raw value of `name`, if present.
    public subscript(name: String) -> String? { values[name] }

    /// A whole number in `range`, or `nil` when absent.
    ///
    /// - Throws: ``Problem`` when the value is not a plain non-negative decimal integer or is out of range.
    public func integer(_ name: String, in range: ClosedRange<Int>, unit: String = "") throws(Problem) -> Int? {
        guard let text = values[name] else { return nil }
        let suffix = unit.isEmpty ? "" : " \(unit)"
        guard !text.isEmpty, text.utf8.count <= 40, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            let kind = range.lowerBound > 0 ? "a positive integer" : "a non-negative integer"
            let what = unit.isEmpty ? kind : "\(kind) number of \(unit)"
            throw .invalidParameter(name, "\(name) must be \(what), got \"\(Self.clip(text))\"")
        }
        guard let value = Int(text), range.contains(value) else {
            throw .invalidParameter(
                name,
                "\(name) must be between \(range.lowerBound) and \(range.upperBound)\(suffix), got \(Self.clip(text))"
            )
        }
        return value
    }

    /// Long hostile values are cut in messages, so a problem body stays small.
    private static func clip(_ text: String) -> String {
        text.count <= 64 ? text : String(text.prefix(64)) + "…"
    }
}
