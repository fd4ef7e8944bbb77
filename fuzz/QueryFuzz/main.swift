// libFuzzer entry point for Spout's query parameters (`QueryParameters`, Sources/Spout/Routing/QueryValidation.swift)
// and the decoder under them (`RequestHead.queryItems`). Built by fuzz/run.sh against the HTTPServer module and the
// Spout sources it needs. The input is the query string, after `?`. Besides "no input traps, leaks or hangs":
// - the fast byte path of `QueryParameters(query:known:)` agrees with `QueryParameters(_:known:)` over `queryItems`
//   (the same values, or the same problem);
// - the decoded pairs, percent-encoded again, decode to the same pairs;
// - `integer(_:in:)` returns a value in its range that the text spells, or a 400 naming the parameter;
// - every problem is a 400 naming a known or offending parameter, with a bounded detail and valid JSON bytes.

import HTTPServer
@testable import Spout

/// Short names, so the fuzzer meets them often; the routes' real names are in the dictionary.
private let known: [String] = ["count", "start", "interval", "format", "userId", "a", "b", "c"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let query = String(decoding: input, as: UTF8.self)
    let request = Request(head: RequestHead(method: .get, target: "/q?" + query))
    guard request.query == query else {
        fatalError("the target split the query \(query.debugDescription) into \(String(describing: request.query))")
    }
    let items = request.queryItems
    checkRoundTrip(items, of: query)

    let fast = Result { () throws(Problem) in try QueryParameters(query: request, known: known) }
    let slow = Result { () throws(Problem) in try QueryParameters(items, known: known) }
    switch (fast, slow) {
    case (.success(let byBytes), .success(let byItems)):
        for name in known where byBytes[name] != byItems[name] {
            fatalError(
                "\(name): byte path \(String(describing: byBytes[name])), items \(String(describing: byItems[name]))"
            )
        }
        for name in known { checkInteger(byBytes, name) }
    case (.failure(let byBytes), .failure(let byItems)):
        if byBytes != byItems { fatalError("byte path threw \(byBytes), items threw \(byItems)") }
        checkProblem(byBytes)
    default:
        fatalError("byte path gave \(fast), items gave \(slow) for \(query.debugDescription)")
    }
    return 0
}

/// Percent-encodes every pair (all but unreserved bytes) and decodes it again: the same pairs must come back.
private func checkRoundTrip(_ items: [(name: String, value: String)], of query: String) {
    let encoded = items.map { encode($0.name) + "=" + encode($0.value) }.joined(separator: "&")
    let again = RequestHead(method: .get, target: "/q?" + encoded).queryItems
    guard again.count == items.count, zip(again, items).allSatisfy({ $0.name == $1.name && $0.value == $1.value })
    else {
        fatalError("\(query.debugDescription) decoded to \(items), re-encoded as \(encoded) to \(again)")
    }
}

private func encode(_ text: String) -> String {
    let hex = Array("0123456789ABCDEF".utf8)
    var bytes: [UInt8] = []
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            bytes.append(byte)
        default:
            bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}

private let ranges: [ClosedRange<Int>] = [0...Int.max, 1...100, 0...0, -5...5, Int.min...Int.max]

private func checkInteger(_ parameters: QueryParameters, _ name: String) {
    for range in ranges {
        do throws(Problem) {
            let value = try parameters.integer(name, in: range, unit: range.lowerBound == 1 ? "milliseconds" : "")
            guard let value else {
                if parameters[name] != nil { fatalError("\(name) is present but integer gave nil") }
                continue
            }
            let text = parameters[name] ?? ""
            if !range.contains(value) || !text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) || Int(text) != value {
                fatalError("\(name)=\(text.debugDescription) gave \(value) for \(range)")
            }
        } catch {
            checkProblem(error, parameter: name)
        }
    }
}

/// A 400 naming the parameter, with a detail short enough for a problem body and JSON without raw control bytes.
private func checkProblem(_ problem: Problem, parameter: String? = nil) {
    guard problem.status == 400, problem.type == Problem.Kind.invalidParameter else {
        fatalError("unexpected problem \(problem)")
    }
    guard let named = problem.extensions.first(where: { $0.name == "parameter" }), case .string(let name) = named.value
    else {
        fatalError("problem names no parameter: \(problem)")
    }
    if let parameter, name != parameter { fatalError("problem names \(name), not \(parameter)") }
    // Offending values are clipped to 64 characters; the rest is fixed text and the known names.
    if problem.detail.count > 400 { fatalError("detail of \(problem.detail.count) characters: \(problem.detail)") }
    let json = problem.jsonBytes
    if json.contains(where: { $0 < 0x20 }) { fatalError("raw control byte in \(json)") }
    if String(validating: json, as: UTF8.self) == nil { fatalError("invalid UTF-8 in problem JSON") }
}

extension Result where Failure == Problem {
    fileprivate init(_ body: () throws(Problem) -> Success) {
        do throws(Problem) {
            self = .success(try body())
        } catch {
            self = .failure(error)
        }
    }
}
