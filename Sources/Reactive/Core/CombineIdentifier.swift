import Synchronization

/// A unique identifier for identifying publisher streams.
///
/// **Thread safety:** value type; not shared. Creating one is safe from any thread.
public struct CombineIdentifier: Hashable, CustomStringConvertible, Sendable {
    private static let counter = Atomic<UInt64>(0)

    private let rawValue: UInt64

    /// Creates a new identifier, different from every other one made this way.
    public init() {
        rawValue = Self.counter.add(1, ordering: .relaxed).newValue | (1 << 63)
    }

    /// Creates the identifier of an object: equal for the same object while it lives.
    public init(_ obj: AnyObject) {
        rawValue = UInt64(UInt(bitPattern: ObjectIdentifier(obj).hashValue))
    }

    public var description: String {
        "0x" + String(rawValue, radix: 16)
    }
}
