import HTTPServer

/// Reads and validates query parameters, turning every mistake into a `400` ``Problem`` that
/// names the parameter and shows what was sent.
///
/// Unknown parameters are rejected too: a typo such as `cout=5` must not silently turn a short
/// stream into an endless one.
///
/// **Thread safety:** value type; not shared.
struct QueryParameters: Sendable {
    /// The pairs in order, each name once. A list, not a dictionary: a route knows a handful of names, so a
    /// linear look-up is cheaper than hashing, and building it allocates once.
    private var values: [(name: String, value: String)] = []

    /// Collects `items`, rejecting names outside `known` and names given more than once.
    init(_ items: [(name: String, value: String)], known: Set<String>) throws(Problem) {
        for (name, value) in items {
            try add(name: name, value: value, known: known)
        }
    }

    /// ``init(_:known:)`` over the query of `request`. A query of ASCII bytes with no `%` or `+` decodes to
    /// itself, so it is read straight from its bytes; any other goes through `Request.queryItems`.
    init(query request: Request, known: Set<String>) throws(Problem) {
        self.init()
        guard var query = request.query else { return }
        let plain = query.withUTF8 { bytes in
            bytes.allSatisfy { $0 < 0x80 && $0 != UInt8(ascii: "%") && $0 != UInt8(ascii: "+") }
        }
        guard plain else {
            self = try QueryParameters(request.queryItems, known: known)
            return
        }
        // The pairs of `RequestHead.queryItems`: split on `&` (empty pairs skipped), then at the first `=`.
        var position = query.utf8.startIndex
        let end = query.utf8.endIndex
        while position < end {
            let pairEnd = query.utf8[position...].firstIndex(of: UInt8(ascii: "&")) ?? end
            defer { position = pairEnd < end ? query.utf8.index(after: pairEnd) : end }
            guard position < pairEnd else { continue }
            let pair = query.utf8[position..<pairEnd]
            let name: String
            let value: String
            if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
                name = String(Substring(pair[pair.startIndex..<equals]))
                value = String(Substring(pair[query.utf8.index(after: equals)...]))
            } else {
                name = String(Substring(pair))
                value = ""
            }
            try add(name: name, value: value, known: known)
        }
    }

    private init() {}

    private mutating func add(name: String, value: String, known: Set<String>) throws(Problem) {
        guard known.contains(name) else {
            let list = known.sorted().joined(separator: ", ")
            throw .invalidParameter(name, "unknown parameter \"\(Self.clip(name))\"; known parameters: \(list)")
        }
        guard lookup(name) == nil else {
            throw .invalidParameter(name, "\(name) must be given at most once")
        }
        values.append((name, value))
    }

    /// The raw value of `name`, if present.
    subscript(name: String) -> String? { lookup(name) }

    private func lookup(_ name: String) -> String? {
        for pair in values where pair.name == name { return pair.value }
        return nil
    }

    /// A whole number in `range`, or `nil` when absent.
    ///
    /// - Throws: ``Problem`` when the value is not a plain non-negative decimal integer or is out of range.
    func integer(_ name: String, in range: ClosedRange<Int>, unit: String = "") throws(Problem) -> Int? {
        guard let text = lookup(name) else { return nil }
        guard !text.isEmpty, text.utf8.count <= 40, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            let kind = range.lowerBound > 0 ? "a positive integer" : "a non-negative integer"
            let what = unit.isEmpty ? kind : "\(kind) number of \(unit)"
            throw .invalidParameter(name, "\(name) must be \(what), got \"\(Self.clip(text))\"")
        }
        guard let value = Int(text), range.contains(value) else {
            // Built here, not before the checks: an interpolated string costs a few hundred instructions.
            let suffix = unit.isEmpty ? "" : " \(unit)"
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
