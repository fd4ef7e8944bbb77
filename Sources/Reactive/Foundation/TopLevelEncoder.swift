import Foundation

/// A type that defines methods for encoding: what `encode(encoder:)` takes.
///
/// `JSONEncoder` and `PropertyListEncoder` conform, with `Data` as their output.
///
///     let data = try JSONEncoder().encode([1, 2])
///     print(String(decoding: data, as: UTF8.self))
///     // Prints: [1,2]
///
/// **Thread safety:** as thread-safe as the conforming encoder.
public protocol TopLevelEncoder {
    /// The type this encoder produces.
    associatedtype Output

    /// Encodes an instance of the indicated type.
    func encode<T: Encodable>(_ value: T) throws -> Output
}

extension JSONEncoder: TopLevelEncoder {
    public typealias Output = Data
}

extension PropertyListEncoder: TopLevelEncoder {
    public typealias Output = Data
}
