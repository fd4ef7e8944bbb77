import RESP

/// One field of a stream entry: a name and its value, both binary-safe.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public struct RedisStreamField: Sendable, Hashable {
    public var name: [UInt8]
    public var value: [UInt8]

    public init(_ name: String, _ value: [UInt8]) {
        self.name = Array(name.utf8)
        self.value = value
    }

    public init(_ name: String, _ value: String) {
        self.init(name, Array(value.utf8))
    }

    public init(name: [UInt8], value: [UInt8]) {
        self.name = name
        self.value = value
    }
}

/// One entry of a Redis stream, as `XRANGE`, `XREVRANGE` and `XREAD` return it.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public struct RedisStreamEntry: Sendable, Hashable {
    /// The entry's id, `<milliseconds>-<sequence>`.
    public var id: String
    /// Its fields in the order they were added (empty for an entry deleted since it was read into a pending list).
    public var fields: [RedisStreamField]

    public init(id: String, fields: [RedisStreamField]) {
        self.id = id
        self.fields = fields
    }

    /// The value of the first field named `name`, or nil.
    public subscript(field name: String) -> [UInt8]? {
        let bytes = Array(name.utf8)
        return fields.first { $0.name == bytes }?.value
    }

    /// Reads `[id, [name, value, …]]`; nil for another shape.
    public init?(_ value: RESPValue) {
        guard let pair = value.withoutAttributes.elements, pair.count == 2, let id = pair[0].string else {
            return nil
        }
        self.id = id
        let list = pair[1].withoutAttributes
        if list.isNull {
            fields = []
            return
        }
        guard let flat = list.elements, flat.count % 2 == 0 else { return nil }
        var fields: [RedisStreamField] = []
        fields.reserveCapacity(flat.count / 2)
        var index = 0
        while index < flat.count {
            guard let name = flat[index].bytes, let value = flat[index &+ 1].bytes else { return nil }
            fields.append(RedisStreamField(name: name, value: value))
            index &+= 2
        }
        self.fields = fields
    }

    /// Reads a list of entries (`XRANGE`'s reply); nil when any element has another shape.
    public static func list(_ value: RESPValue) -> [RedisStreamEntry]? {
        let plain = value.withoutAttributes
        if plain.isNull { return [] }
        guard let elements = plain.elements else { return nil }
        var entries: [RedisStreamEntry] = []
        entries.reserveCapacity(elements.count)
        for element in elements {
            guard let entry = RedisStreamEntry(element) else { return nil }
            entries.append(entry)
        }
        return entries
    }
}

/// The entries `XREAD` returned for one stream.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public struct RedisStreamRead: Sendable, Hashable {
    /// The stream's key.
    public var key: [UInt8]
    /// The new entries, oldest first.
    public var entries: [RedisStreamEntry]

    public init(key: [UInt8], entries: [RedisStreamEntry]) {
        self.key = key
        self.entries = entries
    }

    /// Reads `XREAD`'s reply: a RESP3 map or a RESP2 array of `[key, entries]` pairs; null (a block that timed
    /// out) is empty. Nil for another shape.
    static func list(_ value: RESPValue) -> [RedisStreamRead]? {
        let plain = value.withoutAttributes
        if plain.isNull { return [] }
        var pairs: [(RESPValue, RESPValue)] = []
        if case .map(let entries) = plain {
            pairs = entries.map { ($0.key, $0.value) }
        } else if let elements = plain.elements {
            for element in elements {
                guard let pair = element.withoutAttributes.elements, pair.count == 2 else { return nil }
                pairs.append((pair[0], pair[1]))
            }
        } else {
            return nil
        }
        var reads: [RedisStreamRead] = []
        for (key, list) in pairs {
            guard let key = key.bytes, let entries = RedisStreamEntry.list(list) else { return nil }
            reads.append(RedisStreamRead(key: key, entries: entries))
        }
        return reads
    }
}
