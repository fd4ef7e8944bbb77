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
    init(_ items: [(name: String, value: String)], known: [String]) throws(Problem) {
        for (name, value) in items {
            try add(name: name, value: value, known: known)
        }
    }

    /// ``init(_:known:)`` over the query of `request`. A query of ASCII bytes with no `%` or `+` decodes to
    /// itself, so it is split on its bytes (the pairs of `RequestHead.queryItems`: split on `&`, empty pairs
    /// skipped, then at the first `=`); any other goes through `Request.queryItems`. `request` is borrowed: an
    /// initializer takes its arguments owned, a copy of the request each time.
    init(query request: borrowing Request, known: [String]) throws(Problem) {
        self.init()
        guard var query = request.query else { return }
        let plain = query.withUTF8 { bytes in
            bytes.allSatisfy { $0 < 0x80 && $0 != UInt8(ascii: "%") && $0 != UInt8(ascii: "+") }
        }
        guard plain else {
            self = try QueryParameters(request.queryItems, known: known)
            return
        }
        var pairs: [(name: String, value: String)] = []
        query.withUTF8 { bytes in
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count && bytes[end] != UInt8(ascii: "&") { end += 1 }
                if end > start {
                    var equals = start
                    while equals < end && bytes[equals] != UInt8(ascii: "=") { equals += 1 }
                    let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<equals]), as: UTF8.self)
                    let value =
                        equals < end
                        ? String(decoding: UnsafeBufferPointer(rebasing: bytes[(equals + 1)..<end]), as: UTF8.self) : ""
                    pairs.append((name, value))
                }
                start = end + 1
            }
        }
        // Checked in order, as ``add(name:value:known:)`` would, then kept as they are: one array, built once.
        for index in pairs.indices {
            try Self.check(pairs[index].name, earlier: pairs[..<index], known: known)
        }
        values = pairs
    }

    private init() {}

    private mutating func add(name: String, value: String, known: [String]) throws(Problem) {
        try Self.check(name, earlier: values[...], known: known)
        values.append((name, value))
    }

    /// Rejects a name outside `known`, or one given already (in `earlier`). `known` is a route's handful of
    /// names, scanned rather than hashed (a `Set` hashed every name of every request).
    private static func check(
        _ name: String,
        earlier: ArraySlice<(name: String, value: String)>,
        known: [String]
    ) throws(Problem) {
        guard known.contains(name) else {
            let list = known.sorted().joined(separator: ", ")
            throw .invalidParameter(name, "unknown parameter \"\(Self.clip(name))\"; known parameters: \(list)")
        }
        guard !earlier.contains(where: { $0.name == name }) else {
            throw .invalidParameter(name, "\(name) must be given at most once")
        }
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
