// libFuzzer entry point for the RESP module. Built by fuzz/RESPFuzz/run.sh straight from Sources/RESP, so it calls
// the same API as a connection does. Besides "no input traps, leaks or hangs", it checks that
// - feeding the same bytes whole, in random splits and one byte at a time gives the same values and the same error;
// - every value parsed respects the limits, and writes back to bytes that parse to the same value;
// - a failed parser keeps throwing the same error;
// - the connection state machine, fed the bytes as a server's replies to a pipeline of ordinary and SUBSCRIBE-family
//   commands, completes each command at most once and, once closed, exactly once.

/// The limits under test: the defaults, and tiny ones so that every limit is reachable by short inputs.
private let configurations: [RESPParser.Configuration] = [
    .init(),
    .init(maxBulkBytes: 16, maxAggregateCount: 4, maxDepth: 3, maxLineBytes: 24, maxBufferedBytes: 256),
]

/// Values (written back to bytes, so NaN compares equal to itself) and the error that ended the run.
private struct Outcome: Equatable {
    var values: [[UInt8]] = []
    var error: RESPParseError?
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
        check(random == whole, "random cuts \(cuts) gave \(random) instead of \(whole)")
        if input.count <= 2048 {
            let bytes = run(input, cuts: Array(0...input.count), rawAppend: false, configuration: configuration)
            check(bytes == whole, "byte by byte gave \(bytes) instead of \(whole)")
        }
    }
    drive(input, protocolVersion: 3)
    drive(input, protocolVersion: 2)
    return 0
}

private func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition {
        fatalError(message())
    }
}

/// Appends `input` in pieces ending at `cuts` (and at the end), pulling every value after each piece.
private func run(_ input: [UInt8], cuts: [Int], rawAppend: Bool, configuration: RESPParser.Configuration) -> Outcome {
    var parser = RESPParser(configuration: configuration)
    var outcome = Outcome()
    var start = 0
    // Every value consumes at least three bytes.
    var budget = input.count / 3 + 2
    for end in cuts + [input.count] where end >= start {
        if rawAppend {
            input[start..<end].withUnsafeBytes { parser.append($0) }
        } else {
            parser.append(input[start..<end])
        }
        start = end
        while true {
            let value: RESPValue
            do throws(RESPParseError) {
                guard let next = try parser.next() else { break }
                value = next
            } catch {
                outcome.error = error
                verifyFailed(&parser, error)
                return outcome
            }
            budget -= 1
            check(budget >= 0, "runaway parser: more values than the input can hold")
            check(parser.bufferedByteCount >= 0 && parser.bufferedByteCount <= start, "bufferedByteCount out of range")
            inspect(value, configuration: configuration)
            outcome.values.append(value.encoded)
        }
    }
    return outcome
}

/// Walks `value` without recursion, checking every limit, then checks that its wire form reads back the same.
private func inspect(_ value: RESPValue, configuration: RESPParser.Configuration) {
    var stack: [(RESPValue, depth: Int)] = [(value, 0)]
    while let (current, depth) = stack.popLast() {
        _ = current.description
        _ = current.isNull
        _ = current.string
        var children: [RESPValue] = []
        switch current {
        case .bulkString(let bytes?):
            check(bytes.count <= configuration.maxBulkBytes, "bulk of \(bytes.count) bytes passed the limit")
        case .verbatimString(let format, let text):
            check(format.utf8.count == 3 && text.count + 4 <= configuration.maxBulkBytes, "verbatim past the limit")
        case .array(let elements?), .set(let elements), .push(let elements):
            check(elements.count <= configuration.maxAggregateCount, "aggregate of \(elements.count) passed the limit")
            children = elements
        case .map(let pairs):
            check(pairs.count <= configuration.maxAggregateCount, "map of \(pairs.count) passed the limit")
            children = pairs.flatMap { [$0.key, $0.value] }
        case .attribute(let pairs, let described):
            check(pairs.count <= configuration.maxAggregateCount, "attribute of \(pairs.count) passed the limit")
            children = pairs.flatMap { [$0.key, $0.value] } + [described]
        case .simpleString, .error, .integer, .bulkString(nil), .array(nil), .null, .boolean, .double, .bigNumber,
            .bulkError:
            break
        }
        if !children.isEmpty {
            check(depth < configuration.maxDepth, "aggregates nest past \(configuration.maxDepth)")
            stack += children.map { ($0, depth + 1) }
        }
    }
    // The wire form of a parsed value is itself valid and means the same (compared as bytes: NaN != NaN).
    let encoded = value.encoded
    var again = RESPParser(
        configuration: .init(
            maxBulkBytes: Int.max,
            maxAggregateCount: Int.max,
            maxDepth: 256,
            maxLineBytes: Int.max,
            maxBufferedBytes: Int.max
        )
    )
    again.append(encoded)
    do throws(RESPParseError) {
        let reparsed = try again.next()
        check(reparsed?.encoded == encoded, "\(value) wrote bytes that read back as \(String(describing: reparsed))")
        check(try again.next() == nil && again.isIdle, "\(value) wrote more than one value")
    } catch {
        fatalError("\(value) wrote bytes that do not parse: \(error)")
    }
}

/// A failed parser must keep throwing the same error, hold nothing, and the error must describe itself.
private func verifyFailed(_ parser: inout RESPParser, _ error: RESPParseError) {
    check(!error.description.isEmpty, "empty message for \(error)")
    parser.append(Array("+OK\r\n".utf8))
    do throws(RESPParseError) {
        let value = try parser.next()
        fatalError("failed parser produced \(String(describing: value)) after \(error)")
    } catch let again {
        check(again == error, "failed parser threw \(again) after \(error)")
    }
    check(parser.bufferedByteCount == 0, "a failed parser still holds bytes")
}

/// Feeds `input` as the server's side of a connection whose handshake ends in `protocolVersion`, with ordinary and
/// subscriber commands pipelined, in two reads; then closes. Every command must complete exactly once.
private func drive(_ input: [UInt8], protocolVersion: Int) {
    var machine = RESPConnectionStateMachine<Int>(
        configuration: .init(
            pingInterval: .seconds(1),
            parser: .init(maxBulkBytes: 64, maxAggregateCount: 8, maxDepth: 4, maxLineBytes: 64, maxBufferedBytes: 1024)
        ),
        seed: 1
    )
    var now = ContinuousClock.now
    var completed: [Int: Int] = [:]
    var sent = 0
    func perform(_ action: RESPConnectionStateMachine<Int>.Action) {
        switch action {
        case .reply(let id, _), .fail(let id, _):
            completed[id, default: 0] += 1
            check(completed[id] == 1, "command \(id) completed twice")
        case .close(let failing, _, _):
            for id in failing {
                completed[id, default: 0] += 1
                check(completed[id] == 1, "command \(id) completed twice")
            }
        case .none, .connect, .write, .writeAll, .ready, .push:
            break
        }
    }
    func send(_ command: RESPCommand) {
        sent += 1
        perform(machine.send(command, context: sent, now: now))
    }
    func receive(_ bytes: ArraySlice<UInt8>) {
        machine.bytesReceived(bytes, now: now)
        var budget = bytes.count + 4
        while let action = machine.nextReceivedAction(now: now) {
            budget -= 1
            check(budget >= 0, "runaway machine: more actions than bytes")
            perform(action)
        }
    }

    perform(machine.start(now: now))
    perform(machine.connected(now: now))
    send(RESPCommand("GET", "queued"))
    let hello: RESPValue = protocolVersion == 3 ? .map([]) : .error("ERR unknown command 'HELLO'")
    receive(hello.encoded[...])
    send(RESPCommand("SUBSCRIBE", "a", "b"))
    send(RESPCommand("GET", "k"))
    send(RESPCommand("PSUBSCRIBE", "p*"))
    send(RESPCommand("UNSUBSCRIBE"))
    send(RESPCommand("SET", "k", "v"))
    let middle = input.count / 2
    receive(input[..<middle])
    now = now + .milliseconds(1500)
    perform(machine.timerFired(now: now))
    send(RESPCommand("GET", "late"))
    receive(input[middle...])
    _ = machine.nextDeadline
    perform(machine.close(now: now))
    check(machine.status == .closed, "not closed after close")
    for id in 1...sent {
        check(completed[id] == 1, "command \(id) completed \(completed[id] ?? 0) times")
    }
}
