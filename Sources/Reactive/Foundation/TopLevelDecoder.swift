import Foundation

/// A type that defines methods for decoding: what `decode(type:decoder:)` takes.
///
/// `JSONDecoder` and `PropertyListDecoder` conform, with `Data` as their input.
///
///     let number = try JSONDecoder().decode(Int.self, from: Data("42".utf8))
///     print(number)
///     // Prints: 42
///
/// **Thread safety:** as thread-safe as the conforming decoder.
public protocol TopLevelDecoder {
    /// The type this decoder accepts.
    associatedtype Input

    /// Decodes an instance of the indicated type.
    func decode<T: Decodable>(_ type: T.Type, from: Input) throws -> T
}

extension JSONDecoder: TopLevelDecoder {
    public typealias Input = Data
}

extension PropertyListDecoder: TopLevelDecoder {
    public typealias Input = Data
}
