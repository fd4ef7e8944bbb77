import Testing

/// A test argument shown by a short description: Swift Testing prints every argument in full when a case
/// starts and ends, and a megabyte-long string or byte array made `swift test`'s output one line of ~300 KB.
///
///     @Test(arguments: [Abbreviated(String(repeating: "a", count: 1_000_000))])
///     func refuses(_ text: Abbreviated<String>) { #expect(parse(text.value) == nil) }
///
/// **Thread safety:** a value; `Sendable` when its value is.
public struct Abbreviated<Value: Sendable>: Sendable, CustomTestStringConvertible {
    public let value: Value
    private let shown: String

    /// The argument `value`, shown as at most `limit` characters of its description and its size.
    public init(_ value: Value, limit: Int = 48) {
        self.value = value
        let text = String(describing: value)
        if text.count <= limit {
            shown = text
        } else {
            let size = (value as? any Collection)?.count ?? text.count
            shown = "\(text.prefix(limit))… (\(size) elements)"
        }
    }

    public var testDescription: String { shown }
}
