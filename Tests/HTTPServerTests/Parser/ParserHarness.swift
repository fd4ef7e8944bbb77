@testable import HTTPServer

/// One parser event with body slices copied out, so whole runs can be compared.
enum Collected: Equatable, Sendable, CustomStringConvertible {
    case head(RequestHead)
    case body([UInt8])
    case end(trailers: Headers?)

    var description: String {
        switch self {
        case .head(let head):
            return
                "head(\(head.method) \(head.target) \(head.version) \(head.headers.map { "\($0.name)=\($0.value)" }))"
        case .body(let bytes):
            return "body(\(String(decoding: bytes, as: UTF8.self).debugDescription))"
        case .end(let trailers):
            return "end(\(trailers.map { Array($0).map { "\($0.name)=\($0.value)" }.description } ?? "nil"))"
        }
    }
}

/// Everything a parser produced for some input: the events (adjacent body pieces merged) and the error, if any.
struct Outcome: Equatable {
    var events: [Collected] = []
    var error: ParseError?
}

/// How the input is handed to the parser.
enum Feeding: CustomStringConvertible {
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
}

/// Feeds `input` to a fresh parser as `feeding` says and pulls every event after each append.
func parse(
    _ input: [UInt8],
    feeding: Feeding = .whole,
    configuration: RequestParser.Configuration = .init()
) -> Outcome {
    var parser = RequestParser(configuration: configuration)
    var outcome = Outcome()
    let pieces: [ArraySlice<UInt8>]
    switch feeding {
    case .whole:
        pieces = [input[...]]
    case .split(let index):
        pieces = [input[..<index], input[index...]]
    case .byteByByte:
        pieces = input.indices.map { input[$0...$0] }
    }
    for piece in pieces {
        parser.append(piece)
        guard drain(&parser, into: &outcome) else { return outcome }
    }
    return outcome
}

/// Pulls events until `.needMoreData`; false once the parser failed.
private func drain(_ parser: inout RequestParser, into outcome: inout Outcome) -> Bool {
    while true {
        do throws(ParseError) {
            switch try parser.next() {
            case .needMoreData:
                return true
            case .head(let head):
                outcome.events.append(.head(head))
            case .body(let slice):
                if case .body(let previous) = outcome.events.last {
                    outcome.events[outcome.events.count - 1] = .body(previous + slice)
                } else {
                    outcome.events.append(.body(Array(slice)))
                }
            case .end(let trailers):
                outcome.events.append(.end(trailers: trailers))
            }
        } catch {
            outcome.error = error
            return false
        }
    }
}

extension String {
    /// The string's UTF-8 bytes.
    var bytes: [UInt8] { Array(utf8) }
}
