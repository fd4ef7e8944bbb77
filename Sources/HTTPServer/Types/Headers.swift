/// An ordered list of HTTP header fields that keeps each name's original case and looks names up ignoring case.
///
/// The fields live as bytes in one buffer, so a parsed header section costs two allocations however many fields it
/// has, and a string is only built for a name or value someone reads. Names are compared ASCII case-insensitively
/// over their UTF-8 bytes, so lookups do not allocate. Values are kept exactly as received (the parser trims the
/// surrounding whitespace); bytes that are not valid UTF-8 (obs-text) read as U+FFFD. Equality compares the fields in
/// order, names and values byte for byte.
///
/// **Ownership:** A value; owned by whoever holds it (a ``RequestHead``, a response under construction).
/// **Thread safety:** Value type; not shared.
public struct Headers: Sequence, Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// Where one field line's name and value sit in ``Headers/bytes``.
    struct Field: Sendable, Equatable {
        var name: Range<Int>
        var value: Range<Int>
    }

    /// The names and values of every field, back to back; removed fields may leave unused bytes behind.
    private var bytes: [UInt8]
    /// The fields in order.
    private var fields: [Field]

    /// Creates an empty header list.
    public init() {
        bytes = []
        fields = []
    }

    /// Creates a header list from `(name, value)` pairs, keeping their order.
    public init(_ pairs: [(name: String, value: String)]) {
        self.init()
        for pair in pairs {
            add(name: pair.name, value: pair.value)
        }
    }

    /// Creates a header list from a literal, keeping the literal's order. Repeated names are all kept.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init()
        for (name, value) in elements {
            add(name: name, value: value)
        }
    }

    /// Creates a header list over `bytes` with fields already located in it; used by the parser.
    init(bytes: [UInt8], fields: [Field]) {
        self.bytes = bytes
        self.fields = fields
    }

    /// The number of field lines, counting repeated names separately.
    public var count: Int { fields.count }

    /// Whether the list holds no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// The value of the first field named `name` (ignoring case), or nil.
    ///
    /// - Complexity: O(n) in the number of fields; allocates only for a value longer than 15 bytes.
    public subscript(_ name: String) -> String? {
        firstIndex(of: name).map { string(fields[$0].value) }
    }

    /// The values of every field named `name` (ignoring case), in order.
    public func values(for name: String) -> [String] {
        var result: [String] = []
        forEachIndex(of: name) { result.append(string(fields[$0].value)) }
        return result
    }

    /// Whether a field named `name` (ignoring case) is present.
    public func contains(_ name: String) -> Bool {
        firstIndex(of: name) != nil
    }

    /// Appends a field, keeping any existing fields of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: append(name), value: append(value)))
    }

    /// Replaces the first field named `name` (ignoring case) in place and removes the others, or appends one.
    public mutating func replaceOrAdd(name: String, value: String) {
        guard let first = firstIndex(of: name) else {
            add(name: name, value: value)
            return
        }
        var matches: [Int] = []
        forEachIndex(of: name) { matches.append($0) }
        for index in matches.dropFirst().reversed() {
            fields.remove(at: index)
        }
        fields[first] = Field(name: append(name), value: append(value))
    }

    /// Removes every field named `name` (ignoring case).
    public mutating func remove(name: String) {
        var matches: [Int] = []
        forEachIndex(of: name) { matches.append($0) }
        for index in matches.reversed() {
            fields.remove(at: index)
        }
        if fields.isEmpty {
            bytes.removeAll(keepingCapacity: true)
        }
    }

    /// Whether every name is a token and no value has a control byte other than HTAB (so no CR or LF), i.e.
    /// whether ``appendFieldLines(to:)`` writes exactly these fields. Always true for parsed headers.
    var isValidForWriting: Bool {
        bytes.withUnsafeBufferPointer { storage in
            fields.allSatisfy { field in
                let name = UnsafeBufferPointer(rebasing: storage[field.name])
                return !name.isEmpty && name.allSatisfy(ASCII.isTokenChar)
                    && ASCII.allFieldValueChars(UnsafeBufferPointer(rebasing: storage[field.value]))
            }
        }
    }

    /// Appends `name: value\r\n` for every field, in order, as a response writer needs them.
    ///
    /// > Warning: Names and values are written as they are. Check ``isValidForWriting`` for fields that came from
    /// > the application: a value with CR or LF would start a new header line.
    func appendFieldLines(to buffer: inout [UInt8]) {
        bytes.withUnsafeBufferPointer { storage in
            for field in fields {
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: storage[field.name]))
                buffer.append(ASCII.colon)
                buffer.append(ASCII.space)
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: storage[field.value]))
                buffer.append(ASCII.cr)
                buffer.append(ASCII.lf)
            }
        }
    }

    /// Calls `body` with every field's name and value bytes, in order, without building strings (the response
    /// writer's path). The bytes are as stored: a value that is not valid UTF-8 is passed as it is.
    @inline(__always)
    func forEachFieldBytes(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        bytes.withUnsafeBufferPointer { storage in
            for field in fields {
                body(
                    UnsafeBufferPointer(rebasing: storage[field.name]),
                    UnsafeBufferPointer(rebasing: storage[field.value])
                )
            }
        }
    }

    public static func == (lhs: Headers, rhs: Headers) -> Bool {
        guard lhs.fields.count == rhs.fields.count else { return false }
        return lhs.bytes.withUnsafeBufferPointer { left in
            rhs.bytes.withUnsafeBufferPointer { right in
                for (l, r) in zip(lhs.fields, rhs.fields) {
                    guard left[l.name].elementsEqual(right[r.name]), left[l.value].elementsEqual(right[r.value]) else {
                        return false
                    }
                }
                return true
            }
        }
    }

    /// Iterates the fields in order as `(name, value)` pairs.
    ///
    /// **Ownership:** Holds a copy of the list it iterates.
    /// **Thread safety:** Value type; not shared.
    public struct Iterator: IteratorProtocol {
        private let headers: Headers
        private var index = 0

        fileprivate init(_ headers: Headers) {
            self.headers = headers
        }

        public mutating func next() -> (name: String, value: String)? {
            guard index < headers.fields.count else { return nil }
            let field = headers.fields[index]
            index += 1
            return (headers.string(field.name), headers.string(field.value))
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(self)
    }

    public var underestimatedCount: Int { fields.count }

    // MARK: - Storage

    private func string(_ range: Range<Int>) -> String {
        bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }

    private mutating func append(_ string: String) -> Range<Int> {
        let start = bytes.count
        bytes.append(contentsOf: string.utf8)
        return start..<bytes.count
    }

    private func firstIndex(of name: String) -> Int? {
        var name = name
        return name.withUTF8 { wanted in
            bytes.withUnsafeBufferPointer { storage in
                for index in fields.indices {
                    let field = fields[index].name
                    if field.count == wanted.count
                        && ASCII.caseInsensitiveEquals(UnsafeBufferPointer(rebasing: storage[field]), wanted)
                    {
                        return index
                    }
                }
                return nil
            }
        }
    }

    /// Calls `body` with the index of every field named `name`, ignoring ASCII case.
    private func forEachIndex(of name: String, _ body: (Int) -> Void) {
        var name = name
        name.withUTF8 { wanted in
            bytes.withUnsafeBufferPointer { storage in
                for (index, field) in fields.enumerated()
                where field.name.count == wanted.count
                    && ASCII.caseInsensitiveEquals(UnsafeBufferPointer(rebasing: storage[field.name]), wanted)
                {
                    body(index)
                }
            }
        }
    }
}
