import RESP

/// Everything a parser produced for some input: the values and the error that ended it, if any.
struct ParseOutcome: Equatable, CustomStringConvertible {
    var values: [RESPValue] = []
    var error: RESPParseError?

    var description: String { "values \(values), error \(error.map(String.init(describing:)) ?? "none")" }
}

/// How the input is handed to the parser.
enum Feeding: CustomStringConvertible, Sendable {
    case whole
    case split(at: Int)
    case byteByByte

    var description: String {
        switch self {
        case .whole: return "whole"
        case .split(let index): return "split at \(index)"
        case .byteByByte: return "byte by byte"
        }
    }

    /// Whole, split at every position, and byte by byte.
    static func all(for input: [UInt8]) -> [Feeding] {
        [.whole, .byteByByte] + (0...input.count).map { .split(at: $0) }
    }
}

/// Feeds `input` to a fresh parser as `feeding` says and pulls every value after each append.
func parse(
    _ input: [UInt8],
    feeding: Feeding = .whole,
    configuration: RESPParser.Configuration = .init()
) -> ParseOutcome {
    var parser = RESPParser(configuration: configuration)
    var outcome = ParseOutcome()
    let pieces: [ArraySlice<UInt8>]
    switch feeding {
    case .whole:
        pieces = [input[...]]
    case .split(let index):
        pieces = [input[..<index], input[index...]]
    case .byteByByte:
        pieces = input.indices.map { input[$0...$0] }
    }
    for (offset, piece) in pieces.enumerated() {
        // Alternate the two append overloads, so both are exercised on every input.
        if offset.isMultiple(of: 2) {
            parser.append(piece)
        } else {
            piece.withUnsafeBytes { parser.append($0) }
        }
        while true {
            do throws(RESPParseError) {
                guard let value = try parser.next() else { break }
                outcome.values.append(value)
            } catch {
                outcome.error = error
                return outcome
            }
        }
    }
    return outcome
}

extension String {
    /// The string's UTF-8 bytes.
    var bytes: [UInt8] { Array(utf8) }
}
