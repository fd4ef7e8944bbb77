// libFuzzer entry point for RequestParser. Built by fuzz/run.sh straight from the Types/ and Parser/ sources, so it
// calls the same API as the connection. Besides "no input traps, leaks or hangs", it checks that feeding the same
// bytes whole, in random splits and one byte at a time gives the same events, and that the limits hold.

/// The limits under test: the defaults, and tiny ones so that every limit is reachable by short inputs.
private let configurations: [RequestParser.Configuration] = [
    .init(),
    .init(
        maxRequestLineBytes: 40,
        maxHeaderBytes: 96,
        maxHeaderCount: 4,
        maxBodyBytes: 48,
        maxChunkLineBytes: 12,
        requiresHost: false
    ),
]

/// Events with body pieces merged, plus the error that ended the run.
private struct Outcome: Equatable {
    var events: [ParseEvent] = []
    var error: ParseError?
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    for configuration in configurations {
        let whole = run(input, cuts: [], rawAppend: false, configuration: configuration)
        var seed = UInt64(truncatingIfNeeded: input.count) &* 0x9E37_79B9_7F4A_7C15
        for byte in input.prefix(32) {
            seed = (seed ^ UInt64(byte)) &* 0x1000_0000_01B3
        }
        var cuts: [Int] = []
        if !input.isEmpty {
            for _ in 0..<3 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                cuts.append(Int(truncatingIfNeeded: (seed >> 33) % UInt64(input.count + 1)))
            }
        }
        let random = run(input, cuts: cuts.sorted(), rawAppend: true, configuration: configuration)
        check(random, equals: whole, "random cuts \(cuts)")
        if input.count <= 2048 {
            let bytes = run(input, cuts: Array(0...input.count), rawAppend: false, configuration: configuration)
            check(bytes, equals: whole, "byte by byte")
        }
    }
    return 0
}

private func check(_ outcome: Outcome, equals expected: Outcome, _ feeding: String) {
    if outcome != expected {
        fatalError("feeding \(feeding) gave \(outcome) instead of \(expected)")
    }
}

/// Appends `input` in pieces ending at `cuts` (and at the end), pulling every event after each piece.
/// `rawAppend` picks the `UnsafeRawBufferPointer` overload of `append` instead of the generic one.
private func run(
    _ input: [UInt8],
    cuts: [Int],
    rawAppend: Bool,
    configuration: RequestParser.Configuration
) -> Outcome {
    var parser = RequestParser(configuration: configuration)
    var outcome = Outcome()
    var start = 0
    var bodyBytes = 0
    // Every event but .needMoreData consumes at least one byte or ends a request that consumed some, so a run
    // yields at most about two events per byte.
    var budget = 2 * input.count + 8
    for end in cuts + [input.count] where end >= start {
        if rawAppend {
            input[start..<end].withUnsafeBytes { parser.append($0) }
        } else {
            parser.append(input[start..<end])
        }
        start = end
        while true {
            budget -= 1
            if budget < 0 {
                fatalError("runaway parser: more events than input bytes allow")
            }
            let event: ParseEvent
            do throws(ParseError) {
                event = try parser.next()
            } catch {
                outcome.error = error
                verifyFailed(&parser, error)
                return outcome
            }
            if parser.bufferedByteCount < 0 || parser.bufferedByteCount > start {
                fatalError("bufferedByteCount \(parser.bufferedByteCount) outside 0...\(start)")
            }
            switch event {
            case .needMoreData:
                break
            case .head(let head):
                inspect(head)
                bodyBytes = 0
                outcome.events.append(event)
                continue
            case .body(let slice):
                if slice.isEmpty {
                    fatalError("empty body event")
                }
                bodyBytes += slice.count
                if bodyBytes > configuration.maxBodyBytes {
                    fatalError("body of \(bodyBytes) bytes passed the \(configuration.maxBodyBytes) byte limit")
                }
                if case .body(let previous) = outcome.events.last {
                    outcome.events[outcome.events.count - 1] = .body(previous + slice)
                } else {
                    outcome.events.append(event)
                }
                continue
            case .end:
                outcome.events.append(event)
                continue
            }
            break
        }
    }
    return outcome
}

/// Exercises the head's derived values, which must never trap either.
private func inspect(_ head: RequestHead) {
    _ = head.queryItems
    _ = head.headers["host"]
    _ = head.headers.values(for: "Content-Length")
    let rebuilt = RequestHead(method: head.method, target: head.target, version: head.version, headers: head.headers)
    if rebuilt.path != head.path || rebuilt.query != head.query || rebuilt.keepAlive != head.keepAlive
        || rebuilt.expectsContinue != head.expectsContinue
    {
        fatalError("RequestHead.init disagrees with the parser for \(head.target)")
    }
}

/// A failed parser must keep throwing the same error, and the error must describe itself.
private func verifyFailed(_ parser: inout RequestParser, _ error: ParseError) {
    let code = error.status.code
    if code < 400 || code > 505 || error.description.isEmpty {
        fatalError("bad status \(code) or message for \(error)")
    }
    parser.append([0x0D, 0x0A])
    do throws(ParseError) {
        let event = try parser.next()
        fatalError("failed parser produced \(event) after \(error)")
    } catch let again {
        if again != error {
            fatalError("failed parser changed its error from \(error) to \(again)")
        }
    }
}
