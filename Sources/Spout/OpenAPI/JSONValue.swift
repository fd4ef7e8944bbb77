/// A JSON value built in Swift, with objects that keep their members in the order written: what the
/// OpenAPI document is made of before it is rendered once at start-up.
///
/// **Thread safety:** value type; not shared.
enum JSONValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    case string(String)
    case integer(Int)
    case bool(Bool)
    case array([JSONValue])
    case object([(String, JSONValue)])
    case null

    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int) { self = .integer(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements) }

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.elementsEqual(b) { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.null, .null): true
        default: false
        }
    }

    /// The member `name` of an object, if this is one and has it.
    subscript(name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == name }?.1
    }

    /// This object with `name` set to `value` (replaced in place if present, else appended).
    func setting(_ name: String, to value: JSONValue) -> JSONValue {
        guard case .object(var members) = self else { return self }
        if let index = members.firstIndex(where: { $0.0 == name }) {
            members[index].1 = value
        } else {
            members.append((name, value))
        }
        return .object(members)
    }

    /// The JSON text, compact, members in order.
    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return bytes
    }

    private func append(to bytes: inout [UInt8]) {
        switch self {
        case .string(let value): JSONText.appendString(value, to: &bytes)
        case .integer(let value): JSONText.appendInteger(value, to: &bytes)
        case .bool(let value): bytes.append(contentsOf: (value ? "true" : "false").utf8)
        case .null: bytes.append(contentsOf: "null".utf8)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                element.append(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (position, member) in members.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONText.appendString(member.0, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                member.1.append(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}
