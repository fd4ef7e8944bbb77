import Testing

@testable import HTTPServer

/// `ResponseHead.write` writes the fields from the headers' bytes: the same lines as through strings.
@Suite struct ResponseHeadTests {
    /// The head `write` produces, without its `Date` line (the clock's).
    private func written(_ headers: Headers, _ extra: ExtraFields = ExtraFields()) -> String {
        var buffer = OutboundBuffer()
        var dates = DateCache()
        ResponseHead.write(
            status: .ok,
            headers: headers,
            framing: .contentLength(2),
            connection: .omitted,
            into: &buffer,
            dates: &dates,
            appending: extra
        )
        let lines = String(decoding: buffer.readableBytes, as: UTF8.self)
            .split(separator: "\r\n", omittingEmptySubsequences: false)
        return lines.filter { !$0.hasPrefix("Date: ") }.joined(separator: "\r\n")
    }

    @Test func fieldsInOrderThenExtraFieldsThenFraming() {
        let head = written(
            ["Content-Type": "application/json", "X-Empty": ""],
            ExtraFields(("ETag", "\"t\""), ("X-Request-ID", "abc"))
        )
        #expect(
            head
                == "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Empty: \r\nETag: \"t\"\r\n"
                + "X-Request-ID: abc\r\nContent-Length: 2\r\n\r\n"
        )
        #expect(written([:], ExtraFields(("X-Request-ID", "a\r\nb"))).contains("X-Request-ID: a  b\r\n"))
    }

    @Test func serverOwnedFieldsAreDroppedAndControlBytesBecomeSpaces() {
        let head = written([
            "content-LENGTH": "9", "Connection": "close", "DATE": "x", "Transfer-Encoding": "chunked",
            "X-Evil": "a\r\nSet-Cookie: b\0c",
        ])
        #expect(head == "HTTP/1.1 200 OK\r\nX-Evil: a  Set-Cookie: b c\r\nContent-Length: 2\r\n\r\n")
    }

    @Test func bytesThatAreNotUTF8AreWrittenAsReplacementCharacters() throws {
        var parser = RequestParser()
        parser.append(Array("GET / HTTP/1.1\r\nHost: a\r\nX-Bin: a".utf8) + [0xFF] + Array("b\r\n\r\n".utf8))
        guard case .head(let request) = try parser.next() else {
            Issue.record("expected a head")
            return
        }
        var headers = request.headers
        headers.remove(name: "Host")
        #expect(written(headers) == "HTTP/1.1 200 OK\r\nX-Bin: a\u{FFFD}b\r\nContent-Length: 2\r\n\r\n")
    }
}
