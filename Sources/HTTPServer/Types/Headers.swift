/// An ordered list of HTTP header fields that keeps each name's original case and looks names up ignoring case.
///
/// Names are compared ASCII case-insensitively over their UTF-8 bytes, so lookups on the handful of fields a request
/// usually carries do not allocate. Values are stored exactly as received, with surrounding whitespace trimmed by the
/// parser; bytes that are not valid UTF-8 (obs-text) are replaced by U+FFFD. Equality compares the fields in order,
/// names and values exactly as written.
///
/// **Ownership:** A value; owned by whoever holds it (a ``RequestHead``, a response under construction).
/// **Thread safety:** Value type; not shared.
public struct Headers: Sequence, Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// One header field line.
    fileprivate struct Field: Sendable, Equatable {
        var name: String
        var value: String
    }

    private var fields: [Field]

    /// Creates an empty header list.
    public init() {
        fields = []
    }

    /// Creates a header list from `(name, value)` pairs, keeping their order.
    public init(_ pairs: [(name: String, value: String)]) {
        fields = pairs.map { Field(name: $0.name, value: $0.value) }
    }

    /// Creates a header list from a literal, keeping the literal's order. Repeated names are all kept.
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// Creates an empty header list with room for `capacity` fields.
    init(minimumCapacity capacity: Int) {
        fields = []
        fields.reserveCapacity(capacity)
    }

    /// The number of field lines, counting repeated names separately.
    public var count: Int { fields.count }

    /// Whether the list holds no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// The value of the first field named `name` (ignoring case), or nil.
    ///
    /// - Complexity: O(n) in the number of fields; no allocation.
    public subscript(_ name: String) -> String? {
        for field in fields where ASCII.caseInsensitiveEquals(field.name, name) {
            return field.value
        }
        return nil
    }

    /// The values of every field named `name` (ignoring case), in order.
    public func values(for name: String) -> [String] {
        var result: [String] = []
        for field in fields where ASCII.caseInsensitiveEquals(field.name, name) {
            result.append(field.value)
        }
        return result
    }

    /// Whether a field named `name` (ignoring case) is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { ASCII.caseInsensitiveEquals($0.name, name) }
    }

    /// Appends a field, keeping any existing fields of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces the first field named `name` (ignoring case) in place and removes the others, or appends one.
    public mutating func replaceOrAdd(name: String, value: String) {
        guard let first = fields.firstIndex(where: { ASCII.caseInsensitiveEquals($0.name, name) }) else {
            fields.append(Field(name: name, value: value))
            return
        }
        fields[first] = Field(name: name, value: value)
        var index = first + 1
        while index < fields.count {
            if ASCII.caseInsensitiveEquals(fields[index].name, name) {
                fields.remove(at: index)
            } else {
                index += 1
            }
        }
    }

    /// Removes every field named `name` (ignoring case).
    public mutating func remove(name: String) {
        fields.removeAll { ASCII.caseInsensitiveEquals($0.name, name) }
    }

    /// Iterates the fields in order as `(name, value)` pairs.
    ///
    /// **Ownership:** Holds a copy of the list it iterates.
    /// **Thread safety:** Value type; not shared.
    public struct Iterator: IteratorProtocol {
        private var base: IndexingIterator<[Field]>

        fileprivate init(_ fields: [Field]) {
            base = fields.makeIterator()
        }

        public mutating func next() -> (name: String, value: String)? {
            guard let field = base.next() else { return nil }
            return (field.name, field.value)
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(fields)
    }

    public var underestimatedCount: Int { fields.count }
}
