import Testing

@testable import HTTPServer

@Suite struct ParserStateMachineTests {
    private func advance(_ machine: inout ParserStateMachine, _ text: String) throws(ParseError)
        -> ParserStateMachine.Action
    {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBufferPointer { buffer throws(ParseError) in try machine.advance(over: buffer) }
    }

    @Test func keepsTheRequestLineBufferedUntilTheHeadIsComplete() throws {
        var machine = ParserStateMachine(configuration: .init())
        guard case .needMoreData(let consumed) = try advance(&machine, "GET / HTTP/1.1\r\nHost: a\r\n") else {
            Issue.record("expected needMoreData")
            return
        }
        #expect(consumed == 0)
        guard case .head(let head, let headBytes) = try advance(&machine, "GET / HTTP/1.1\r\nHost: a\r\n\r\nX") else {
            Issue.record("expected a head")
            return
        }
        #expect(head.path == "/")
        #expect(headBytes == 27)
    }

    @Test func consumesIgnoredEmptyLinesRightAway() throws {
        var machine = ParserStateMachine(configuration: .init())
        guard case .needMoreData(let consumed) = try advance(&machine, "\r\n\r\nGET") else {
            Issue.record("expected needMoreData")
            return
        }
        #expect(consumed == 4)
        #expect(!machine.isAwaitingRequest)
    }

    @Test func reportsBodyBytesInPlace() throws {
        var machine = ParserStateMachine(configuration: .init())
        let request = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n"
        guard case .head(_, let consumed) = try advance(&machine, request + "ab") else {
            Issue.record("expected a head")
            return
        }
        #expect(consumed == request.utf8.count)
        guard case .body(let offset, let count) = try advance(&machine, "ab") else {
            Issue.record("expected body")
            return
        }
        #expect(offset == 0 && count == 2)
        guard case .body(0, 2) = try advance(&machine, "cdGET") else {
            Issue.record("expected the rest of the body")
            return
        }
        guard case .end(nil, 0) = try advance(&machine, "GET") else {
            Issue.record("expected the end")
            return
        }
        #expect(machine.isAwaitingRequest)
    }

    @Test func skipsChunkFramingWithinOneCall() throws {
        var machine = ParserStateMachine(configuration: .init())
        let head = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        guard case .head = try advance(&machine, head) else {
            Issue.record("expected a head")
            return
        }
        guard case .body(let offset, let count) = try advance(&machine, "3;x=y\r\nabc\r\n0\r\n\r\n") else {
            Issue.record("expected body")
            return
        }
        #expect(offset == 7 && count == 3)
        guard case .end(nil, 7) = try advance(&machine, "\r\n0\r\n\r\n") else {
            Issue.record("expected the end after the last chunk")
            return
        }
    }
}
