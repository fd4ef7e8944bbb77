import Testing

@testable import HTTPServer

/// A well-formed input and the events it must produce.
struct ValidSample: CustomTestStringConvertible, Sendable {
    var name: String
    var input: [UInt8]
    var expected: [Collected]

    var testDescription: String { name }
}

private func head(
    _ method: Method,
    _ target: String,
    _ version: Version = .http1_1,
    _ headers: Headers
) -> Collected {
    .head(RequestHead(method: method, target: target, version: version, headers: headers))
}

private func body(_ text: String) -> Collected { .body(text.bytes) }

private let end = Collected.end(trailers: nil)

let validSamples: [ValidSample] = [
    ValidSample(
        name: "GET with query",
        input: "GET /search?q=swift&page=2 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test/1.0\r\n\r\n".bytes,
        expected: [
            head(.get, "/search?q=swift&page=2", .http1_1, ["Host": "example.com", "User-Agent": "test/1.0"]), end,
        ]
    ),
    ValidSample(
        name: "POST with Content-Length body",
        input: "POST /items HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world"
            .bytes,
        expected: [
            head(.post, "/items", .http1_1, ["Host": "a", "Content-Type": "text/plain", "Content-Length": "11"]),
            body("hello world"), end,
        ]
    ),
    ValidSample(
        name: "chunked body with extension and trailers",
        input: ("POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=\"quoted \\\" value\";flag\r\nhello\r\nA ; x = y\r\n world!!!!\r\n"
            + "0\r\nX-Checksum: abc\r\nx-other:  d \r\n\r\n")
            .bytes,
        expected: [
            head(.post, "/upload", .http1_1, ["Host": "a", "Transfer-Encoding": "chunked"]),
            body("hello world!!!!"),
            .end(trailers: ["X-Checksum": "abc", "x-other": "d"]),
        ]
    ),
    ValidSample(
        name: "chunked body without trailers",
        input: "PUT /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n000\r\n\r\n".bytes,
        expected: [head(.put, "/x", .http1_1, ["Host": "a", "Transfer-Encoding": "Chunked"]), body("abc"), end]
    ),
    ValidSample(
        name: "HEAD",
        input: "HEAD /health HTTP/1.1\r\nHost: a\r\n\r\n".bytes,
        expected: [head(.head, "/health", .http1_1, ["Host": "a"]), end]
    ),
    ValidSample(
        name: "HTTP/1.0 keep-alive",
        input: "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n".bytes,
        expected: [head(.get, "/", .http1_0, ["Connection": "Keep-Alive"]), end]
    ),
    ValidSample(
        name: "HTTP/1.0 close",
        input: "GET / HTTP/1.0\r\n\r\n".bytes,
        expected: [head(.get, "/", .http1_0, [:]), end]
    ),
    ValidSample(
        name: "HTTP/1.1 Connection close",
        input: "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade, close\r\n\r\n".bytes,
        expected: [head(.get, "/", .http1_1, ["Host": "a", "Connection": "upgrade, close"]), end]
    ),
    ValidSample(
        name: "absolute-form target",
        input: "GET http://example.com:8080/a/b?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n".bytes,
        expected: [head(.get, "http://example.com:8080/a/b?x=1", .http1_1, ["Host": "example.com:8080"]), end]
    ),
    ValidSample(
        name: "absolute-form target without path",
        input: "GET HTTPS://example.com?x HTTP/1.1\r\nHost: example.com\r\n\r\n".bytes,
        expected: [head(.get, "HTTPS://example.com?x", .http1_1, ["Host": "example.com"]), end]
    ),
    ValidSample(
        name: "pipelined pair",
        input: ("GET /one HTTP/1.1\r\nHost: a\r\n\r\n"
            + "POST /two HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc").bytes,
        expected: [
            head(.get, "/one", .http1_1, ["Host": "a"]), end,
            head(.post, "/two", .http1_1, ["Host": "a", "Content-Length": "3"]), body("abc"), end,
        ]
    ),
    ValidSample(
        name: "Expect 100-continue",
        input: "POST /up HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\nok".bytes,
        expected: [
            head(.post, "/up", .http1_1, ["Host": "a", "Expect": "100-Continue", "Content-Length": "2"]),
            body("ok"), end,
        ]
    ),
    ValidSample(
        name: "OPTIONS asterisk",
        input: "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n".bytes,
        expected: [head(.options, "*", .http1_1, ["Host": "a"]), end]
    ),
    ValidSample(
        name: "lowercase method is a distinct token",
        input: "get / HTTP/1.1\r\nHost: a\r\n\r\n".bytes,
        expected: [head(Method("get"), "/", .http1_1, ["Host": "a"]), end]
    ),
    ValidSample(
        name: "identical duplicate Content-Length",
        input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\ncontent-length: 2, 02\r\n\r\nhi".bytes,
        expected: [
            head(.post, "/", .http1_1, ["Host": "a", "Content-Length": "2", "content-length": "2, 02"]),
            body("hi"), end,
        ]
    ),
    ValidSample(
        name: "empty lines before the request line",
        input: "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n".bytes,
        expected: [head(.get, "/", .http1_1, ["Host": "a"]), end]
    ),
    ValidSample(
        name: "HTTP/1.2 handled as HTTP/1.x",
        input: "GET / HTTP/1.2\r\nHost: a\r\n\r\n".bytes,
        expected: [head(.get, "/", Version(major: 1, minor: 2), ["Host": "a"]), end]
    ),
    ValidSample(
        name: "value whitespace trimmed, inner tab and empty value kept",
        input: "GET / HTTP/1.1\r\nHost:a\r\nX-A: \t one\ttwo \t\r\nX-Empty:\r\nX-Blank:   \r\n\r\n".bytes,
        expected: [head(.get, "/", .http1_1, ["Host": "a", "X-A": "one\ttwo", "X-Empty": "", "X-Blank": ""]), end]
    ),
    ValidSample(
        name: "extension method and CONNECT authority-form",
        input: "PURGE /cache HTTP/1.1\r\nHost: a\r\n\r\nCONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n"
            .bytes,
        expected: [
            head(Method("PURGE"), "/cache", .http1_1, ["Host": "a"]), end,
            head(.connect, "example.com:443", .http1_1, ["Host": "example.com"]), end,
        ]
    ),
    ValidSample(
        name: "zero Content-Length",
        input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n".bytes,
        expected: [head(.post, "/", .http1_1, ["Host": "a", "Content-Length": "0"]), end]
    ),
]

@Suite struct RequestParserValidTests {
    @Test(arguments: validSamples)
    func wholeInputYieldsExpectedEvents(_ sample: ValidSample) {
        let outcome = parse(sample.input)
        #expect(outcome.error == nil)
        #expect(outcome.events == sample.expected)
    }

    @Test(arguments: validSamples)
    func everyTwoWaySplitYieldsTheSameEvents(_ sample: ValidSample) {
        let whole = parse(sample.input)
        for index in 0...sample.input.count {
            let split = parse(sample.input, feeding: .split(at: index))
            #expect(split == whole, "split at \(index)")
        }
    }

    @Test(arguments: validSamples)
    func byteByByteYieldsTheSameEvents(_ sample: ValidSample) {
        #expect(parse(sample.input, feeding: .byteByByte) == parse(sample.input))
    }

    @Test func headFieldsAreDerivedFromTheRequest() throws {
        let outcome = parse(
            "GET /search?q=a+b&x=%41 HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n".bytes
        )
        guard case .head(let head) = try #require(outcome.events.first) else {
            Issue.record("expected a head, got \(outcome)")
            return
        }
        #expect(head.method == .get)
        #expect(head.target == "/search?q=a+b&x=%41")
        #expect(head.path == "/search")
        #expect(head.query == "q=a+b&x=%41")
        #expect(head.version == .http1_1)
        #expect(head.keepAlive == false)
        #expect(head.expectsContinue == true)
        #expect(head.queryItems.map { [$0.name, $0.value] } == [["q", "a b"], ["x", "A"]])
    }

    @Test func keepAliveFollowsVersionAndConnection() throws {
        let cases: [(String, Bool)] = [
            ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", true),
            ("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n", true),
            ("GET / HTTP/1.1\r\nHost: a\r\nConnection: CLOSE\r\n\r\n", false),
            ("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", false),
            ("GET / HTTP/1.0\r\n\r\n", false),
            ("GET / HTTP/1.0\r\nConnection: foo, keep-alive\r\n\r\n", true),
            ("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", false),
        ]
        for (request, keepAlive) in cases {
            let outcome = parse(request.bytes)
            guard case .head(let head) = try #require(outcome.events.first) else {
                Issue.record("expected a head for \(request.debugDescription)")
                continue
            }
            #expect(head.keepAlive == keepAlive, "\(request.debugDescription)")
        }
    }

    @Test func expectContinueIsIgnoredForHTTP1_0() throws {
        let outcome = parse("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx".bytes)
        guard case .head(let head) = try #require(outcome.events.first) else {
            Issue.record("expected a head")
            return
        }
        #expect(head.expectsContinue == false)
    }

    @Test func absoluteFormSplitsPathAndQuery() throws {
        let cases: [(String, String, String?)] = [
            ("http://example.com:8080/a/b?x=1", "/a/b", "x=1"),
            ("HTTPS://example.com?x", "/", "x"),
            ("http://example.com", "/", nil),
            ("/plain", "/plain", nil),
            ("/q?", "/q", ""),
            ("/q?a?b", "/q", "a?b"),
        ]
        for (target, path, query) in cases {
            let outcome = parse("GET \(target) HTTP/1.1\r\nHost: a\r\n\r\n".bytes)
            guard case .head(let head) = try #require(outcome.events.first) else {
                Issue.record("expected a head for \(target)")
                continue
            }
            #expect(head.path == path, "\(target)")
            #expect(head.query == query, "\(target)")
        }
    }

    @Test func bodyIsStreamedAsBytesArrive() throws {
        var parser = RequestParser()
        parser.append("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nhel".bytes)
        guard case .head = try parser.next() else {
            Issue.record("expected the head first")
            return
        }
        #expect(try parser.next() == .body("hel".bytes[...]))
        #expect(try parser.next() == .needMoreData)
        parser.append("lo wo".bytes)
        #expect(try parser.next() == .body("lo wo".bytes[...]))
        #expect(try parser.next() == .needMoreData)
        parser.append("rldGET".bytes)
        #expect(try parser.next() == .body("rl".bytes[...]))
        #expect(try parser.next() == .end(trailers: nil))
        #expect(try parser.next() == .needMoreData)
        #expect(parser.bufferedByteCount == 4)
        #expect(!parser.isIdle)
    }

    @Test func chunkDataIsStreamedBeforeTheChunkIsComplete() throws {
        var parser = RequestParser()
        parser.append("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123".bytes)
        guard case .head = try parser.next() else {
            Issue.record("expected the head first")
            return
        }
        #expect(try parser.next() == .body("0123".bytes[...]))
        #expect(try parser.next() == .needMoreData)
        parser.append("456789\r".bytes)
        #expect(try parser.next() == .body("456789".bytes[...]))
        #expect(try parser.next() == .needMoreData)
        parser.append("\n0\r\nX-T: 1\r\n\r\n".bytes)
        #expect(try parser.next() == .end(trailers: ["X-T": "1"]))
        #expect(parser.isIdle)
    }

    @Test func oversizedBodyIsRejectedBeforeItArrives() {
        var parser = RequestParser(configuration: .init(maxBodyBytes: 10))
        parser.append("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n".bytes)
        #expect(throws: ParseError.bodyTooLarge(limit: 10)) { try parser.next() }
    }

    @Test func strayEmptyLinesBetweenRequestsLeaveTheParserIdle() throws {
        var parser = RequestParser()
        parser.append("GET / HTTP/1.1\r\nHost: a\r\n\r\n\r\n".bytes)
        guard case .head = try parser.next() else {
            Issue.record("expected a head")
            return
        }
        #expect(try parser.next() == .end(trailers: nil))
        #expect(try parser.next() == .needMoreData)
        #expect(parser.isIdle)
    }

    @Test func pipelinedBytesStayBufferedUntilAsked() throws {
        var parser = RequestParser()
        #expect(parser.isIdle)
        let first = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n".bytes
        let second = "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n".bytes
        parser.append(first + second)
        #expect(parser.bufferedByteCount == first.count + second.count)
        guard case .head(let one) = try parser.next() else {
            Issue.record("expected the first head")
            return
        }
        #expect(one.path == "/1")
        #expect(try parser.next() == .end(trailers: nil))
        #expect(parser.bufferedByteCount == second.count)
        #expect(!parser.isIdle)
        guard case .head(let two) = try parser.next() else {
            Issue.record("expected the second head")
            return
        }
        #expect(two.path == "/2")
        #expect(try parser.next() == .end(trailers: nil))
        #expect(parser.bufferedByteCount == 0)
        #expect(parser.isIdle)
        #expect(try parser.next() == .needMoreData)
    }

    @Test func rawBufferAppendMatchesCollectionAppend() throws {
        let request = "GET /raw HTTP/1.1\r\nHost: a\r\n\r\n".bytes
        var parser = RequestParser()
        request.withUnsafeBytes { parser.append($0) }
        guard case .head(let head) = try parser.next() else {
            Issue.record("expected a head")
            return
        }
        #expect(head.path == "/raw")
    }

    @Test func manyPipelinedRequestsCompactTheBuffer() throws {
        var parser = RequestParser()
        let request = "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n".bytes
        var heads = 0
        for round in 0..<2000 {
            // Arrives in odd pieces so consumed prefixes and partial requests mix.
            let cut = round % request.count
            parser.append(request[..<cut])
            parser.append(request[cut...] + request[..<3])
            parser.append(request[3...])
            while true {
                let event = try parser.next()
                if event == .needMoreData { break }
                if case .head = event { heads += 1 }
            }
        }
        #expect(heads == 4000)
        #expect(parser.isIdle)
    }

    @Test func missingHostIsAcceptedWhenNotRequired() {
        let outcome = parse(
            "GET / HTTP/1.1\r\n\r\n".bytes,
            configuration: .init(requiresHost: false)
        )
        #expect(outcome.error == nil)
        #expect(outcome.events.count == 2)
    }

    @Test func limitsAreInclusive() {
        let line = "GET /" + String(repeating: "a", count: 8192 - 14) + " HTTP/1.1"
        #expect(line.utf8.count == 8192)
        let atLimit = parse((line + "\r\nHost: a\r\n\r\n").bytes)
        #expect(atLimit.error == nil)

        let field = "X: " + String(repeating: "v", count: 16384 - 16)
        let section = "Host: a\r\n" + field + "\r\n\r\n"
        #expect(section.utf8.count == 16384)
        let headerAtLimit = parse(("GET / HTTP/1.1\r\n" + section).bytes)
        #expect(headerAtLimit.error == nil)

        let fields = (0..<99).map { "X-\($0): v\r\n" }.joined()
        let countAtLimit = parse(("GET / HTTP/1.1\r\nHost: a\r\n" + fields + "\r\n").bytes)
        #expect(countAtLimit.error == nil)

        let body = String(repeating: "b", count: 64)
        let bodyAtLimit = parse(
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 64\r\n\r\n\(body)".bytes,
            configuration: .init(maxBodyBytes: 64)
        )
        #expect(bodyAtLimit.error == nil)
        let chunkedAtLimit = parse(
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "20\r\n\(body.prefix(32))\r\n20\r\n\(body.prefix(32))\r\n0\r\n\r\n")
                .bytes,
            configuration: .init(maxBodyBytes: 64)
        )
        #expect(chunkedAtLimit.error == nil)
    }
}
