import Testing

@testable import HTTPServer

/// A malformed or hostile input, the error it must raise and the status that error answers with.
struct InvalidSample: CustomTestStringConvertible, Sendable {
    var name: String
    var input: [UInt8]
    var error: ParseError
    var status: Int
    var configuration = RequestParser.Configuration()

    var testDescription: String { name }
}

private let post = "POST / HTTP/1.1\r\nHost: a\r\n"
private let chunkedPost = post + "Transfer-Encoding: chunked\r\n\r\n"

private func sample(
    _ name: String,
    _ input: String,
    _ error: ParseError,
    _ status: Int,
    configuration: RequestParser.Configuration = .init()
) -> InvalidSample {
    InvalidSample(name: name, input: input.bytes, error: error, status: status, configuration: configuration)
}

let invalidSamples: [InvalidSample] = [
    // Request smuggling.
    sample(
        "content-length then transfer-encoding",
        post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        .contentLengthWithTransferEncoding,
        400
    ),
    sample(
        "transfer-encoding then content-length",
        post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
        .contentLengthWithTransferEncoding,
        400
    ),
    sample(
        "content-length lines disagree",
        post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
        .conflictingContentLength,
        400
    ),
    sample("content-length list disagrees", post + "Content-Length: 5, 6\r\n\r\n", .conflictingContentLength, 400),
    sample("content-length not a number", post + "Content-Length: abc\r\n\r\n", .invalidContentLength("abc"), 400),
    sample("content-length negative", post + "Content-Length: -1\r\n\r\n", .invalidContentLength("-1"), 400),
    sample("content-length with plus sign", post + "Content-Length: +5\r\n\r\n", .invalidContentLength("+5"), 400),
    sample("content-length empty", post + "Content-Length:\r\n\r\n", .invalidContentLength(""), 400),
    sample("content-length trailing comma", post + "Content-Length: 5,\r\n\r\n", .invalidContentLength("5,"), 400),
    sample("content-length hexadecimal", post + "Content-Length: 0x10\r\n\r\n", .invalidContentLength("0x10"), 400),
    sample("content-length inner space", post + "Content-Length: 5 5\r\n\r\n", .invalidContentLength("5 5"), 400),
    sample(
        "content-length overflowing",
        post + "Content-Length: 99999999999999999999999\r\n\r\n",
        .bodyTooLarge(limit: 1_048_576),
        413
    ),
    sample(
        "content-length over the body limit",
        post + "Content-Length: 1048577\r\n\r\n",
        .bodyTooLarge(limit: 1_048_576),
        413
    ),
    sample(
        "transfer-encoding gzip",
        post + "Transfer-Encoding: gzip\r\n\r\n",
        .unsupportedTransferEncoding("gzip"),
        501
    ),
    sample(
        "transfer-encoding gzip then chunked",
        post + "Transfer-Encoding: gzip, chunked\r\n\r\n",
        .unsupportedTransferEncoding("gzip, chunked"),
        501
    ),
    sample(
        "transfer-encoding chunked not last",
        post + "Transfer-Encoding: chunked, identity\r\n\r\n",
        .unsupportedTransferEncoding("chunked, identity"),
        501
    ),
    sample(
        "transfer-encoding chunked twice in a list",
        post + "Transfer-Encoding: chunked, chunked\r\n\r\n",
        .unsupportedTransferEncoding("chunked, chunked"),
        501
    ),
    sample(
        "transfer-encoding chunked on two lines",
        post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        .unsupportedTransferEncoding("chunked"),
        501
    ),
    sample(
        "transfer-encoding look-alike",
        post + "Transfer-Encoding: xchunked\r\n\r\n",
        .unsupportedTransferEncoding("xchunked"),
        501
    ),
    sample("transfer-encoding empty", post + "Transfer-Encoding: \r\n\r\n", .unsupportedTransferEncoding(""), 501),
    sample(
        "transfer-encoding in HTTP/1.0",
        "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        .transferEncodingWithHTTP1_0,
        400
    ),
    sample("obsolete line folding", post + "X-A: one\r\n two\r\n\r\n", .obsoleteLineFolding, 400),
    sample("whitespace before the first field", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", .obsoleteLineFolding, 400),
    sample(
        "whitespace before the colon",
        "GET / HTTP/1.1\r\nHost : a\r\n\r\n",
        .invalidHeaderName("Host "),
        400
    ),
    sample("field line without colon", post + "Nonsense\r\n\r\n", .invalidHeaderName("Nonsense"), 400),
    sample("empty field name", post + ": value\r\n\r\n", .invalidHeaderName(":"), 400),
    sample("invalid field name character", post + "X(y): z\r\n\r\n", .invalidHeaderName("X("), 400),
    sample("non-ascii field name", post + "X-\u{e9}: z\r\n\r\n", .invalidHeaderName("X-\\xc3"), 400),
    sample("NUL in a field value", post + "X-A: a\u{0}b\r\n\r\n", .invalidHeaderValue(name: "X-A"), 400),
    sample("CR in a field value", post + "X-A: a\rb\r\n\r\n", .invalidHeaderValue(name: "X-A"), 400),
    sample("DEL in a field value", post + "X-A: a\u{7f}\r\n\r\n", .invalidHeaderValue(name: "X-A"), 400),
    sample("escape in a field value", post + "X-A: \u{1b}[31m\r\n\r\n", .invalidHeaderValue(name: "X-A"), 400),
    sample("missing host", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", .missingHost, 400),
    sample("two hosts", "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", .multipleHosts, 400),

    // Line endings: bare LF is rejected everywhere.
    sample("bare LF after the request line", "GET / HTTP/1.1\nHost: a\r\n\r\n", .bareLineFeed, 400),
    sample("bare LF after a field line", "GET / HTTP/1.1\r\nHost: a\n\r\n", .bareLineFeed, 400),
    sample("bare LF ending the header section", "GET / HTTP/1.1\r\nHost: a\r\n\n", .bareLineFeed, 400),
    sample("bare LF as the first byte", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", .bareLineFeed, 400),
    sample("bare LF after a chunk size", chunkedPost + "5\nhello\r\n0\r\n\r\n", .bareLineFeed, 400),
    sample("bare LF after chunk data", chunkedPost + "5\r\nhello\n0\r\n\r\n", .bareLineFeed, 400),
    sample("bare LF in the trailers", chunkedPost + "0\r\nX: y\n\r\n", .bareLineFeed, 400),

    // Chunked framing.
    sample("chunk size not hexadecimal", chunkedPost + "zz\r\n", .invalidChunkSize("zz"), 400),
    sample("chunk size empty", chunkedPost + "\r\n", .invalidChunkSize(""), 400),
    sample("chunk size followed by junk", chunkedPost + "5 x\r\nhello\r\n", .invalidChunkSize("5 x"), 400),
    sample("chunk size negative", chunkedPost + "-5\r\n", .invalidChunkSize("-5"), 400),
    sample(
        "chunk size overflowing",
        chunkedPost + "fffffffffffffffffffffff\r\n",
        .bodyTooLarge(limit: 1_048_576),
        413
    ),
    sample("chunks over the body limit", chunkedPost + "100001\r\n", .bodyTooLarge(limit: 1_048_576), 413),
    sample(
        "chunks adding up over the body limit",
        chunkedPost + "8\r\n12345678\r\n9\r\n",
        .bodyTooLarge(limit: 16),
        413,
        configuration: .init(maxBodyBytes: 16)
    ),
    sample("control byte in a chunk extension", chunkedPost + "5;a=\u{1}\r\nhello\r\n", .invalidChunkExtension, 400),
    sample("chunk size with trailing space", chunkedPost + "5 \r\nhello\r\n", .invalidChunkSize("5 "), 400),
    sample("chunk extension without a name", chunkedPost + "5;\r\nhello\r\n", .invalidChunkExtension, 400),
    sample("chunk extension name not a token", chunkedPost + "5;a(b\r\nhello\r\n", .invalidChunkExtension, 400),
    sample("chunk extension without a value", chunkedPost + "5;a=\r\nhello\r\n", .invalidChunkExtension, 400),
    sample("chunk extension unterminated quote", chunkedPost + "5;a=\"b\r\nhello\r\n", .invalidChunkExtension, 400),
    sample("chunk extension trailing space", chunkedPost + "5;a=b \r\nhello\r\n", .invalidChunkExtension, 400),
    sample(
        "chunk line too long",
        chunkedPost + "5;" + String(repeating: "x", count: 5000) + "\r\n",
        .chunkLineTooLong(limit: 4096),
        400
    ),
    sample("chunk data without CRLF", chunkedPost + "5\r\nhelloX\r\n0\r\n\r\n", .invalidChunkTerminator, 400),
    sample("chunk data with CR only", chunkedPost + "5\r\nhello\rX0\r\n\r\n", .invalidChunkTerminator, 400),
    sample("chunk data longer than its size", chunkedPost + "3\r\nhello\r\n0\r\n\r\n", .invalidChunkTerminator, 400),
    sample("trailer with a bad name", chunkedPost + "0\r\nBad Name: x\r\n\r\n", .invalidHeaderName("Bad "), 400),

    // Limits.
    sample(
        "request line too long",
        "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: a\r\n\r\n",
        .requestLineTooLong(limit: 8192),
        414
    ),
    sample(
        "request line one byte over the limit",
        "GET /" + String(repeating: "a", count: 8192 - 13) + " HTTP/1.1\r\nHost: a\r\n\r\n",
        .requestLineTooLong(limit: 8192),
        414
    ),
    sample(
        "request line too long without any line end",
        "GET /" + String(repeating: "a", count: 9000),
        .requestLineTooLong(limit: 8192),
        414
    ),
    sample(
        "header section too large",
        "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + String(repeating: "v", count: 17000) + "\r\n\r\n",
        .headerTooLarge(limit: 16384),
        431
    ),
    sample(
        "header section one byte over the limit",
        "GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "v", count: 16384 - 16 + 1) + "\r\n\r\n",
        .headerTooLarge(limit: 16384),
        431
    ),
    sample(
        "too many header fields",
        "GET / HTTP/1.1\r\nHost: a\r\n" + (0..<100).map { "X-\($0): v\r\n" }.joined() + "\r\n",
        .tooManyHeaders(limit: 100),
        431
    ),
    sample(
        "trailer section too large",
        chunkedPost + "0\r\nX: " + String(repeating: "v", count: 100) + "\r\n\r\n",
        .headerTooLarge(limit: 64),
        431,
        configuration: .init(maxHeaderBytes: 64)
    ),

    // Request line.
    sample("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", .http2Preface, 505),
    sample("HTTP/3.0", "GET / HTTP/3.0\r\nHost: a\r\n\r\n", .unsupportedVersion("HTTP/3.0"), 505),
    sample("HTTP/2.0 request line", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", .unsupportedVersion("HTTP/2.0"), 505),
    sample("HTTP/0.9", "GET / HTTP/0.9\r\n\r\n", .unsupportedVersion("HTTP/0.9"), 505),
    sample("lowercase version", "GET / http/1.1\r\nHost: a\r\n\r\n", .invalidVersion("http/1.1"), 400),
    sample("two-digit version", "GET / HTTP/1.10\r\nHost: a\r\n\r\n", .invalidVersion("HTTP/1.10"), 400),
    sample("space after the version", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", .invalidVersion("HTTP/1.1 "), 400),
    sample("no version", "GET /\r\nHost: a\r\n\r\n", .invalidRequestLine("GET /"), 400),
    sample("double space", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidRequestLine("GET  / HTTP/1.1"), 400),
    sample("invalid method character", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidMethod("G(T"), 400),
    sample("empty method", " / HTTP/1.1\r\nHost: a\r\n\r\n", .invalidMethod(""), 400),
    sample("control byte in the target", "GET /a\u{1}b HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget("/a\\x01b"), 400),
    sample("non-ascii target", "GET /caf\u{e9} HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget("/caf\\xc3\\xa9"), 400),
    sample("asterisk-form for GET", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", .invalidTarget("*"), 400),
    sample(
        "authority-form for GET",
        "GET example.com:80 HTTP/1.1\r\nHost: a\r\n\r\n",
        .invalidTarget("example.com:80"),
        400
    ),
    sample(
        "unknown scheme",
        "GET ftp://example.com/ HTTP/1.1\r\nHost: a\r\n\r\n",
        .invalidTarget("ftp://example.com/"),
        400
    ),
    InvalidSample(
        name: "TLS ClientHello",
        input: [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03],
        error: .tlsHandshake,
        status: 400
    ),
]

@Suite struct RequestParserInvalidTests {
    @Test(arguments: invalidSamples)
    func rejectsWithItsErrorAndStatus(_ sample: InvalidSample) {
        let outcome = parse(sample.input, configuration: sample.configuration)
        #expect(outcome.error == sample.error)
        #expect(outcome.error?.status.code == sample.status)
    }

    @Test(arguments: invalidSamples)
    func everySplitFailsTheSameWay(_ sample: InvalidSample) {
        let whole = parse(sample.input, configuration: sample.configuration)
        #expect(parse(sample.input, feeding: .byteByByte, configuration: sample.configuration) == whole)
        // Long inputs are checked at a stride to keep the suite fast on two cores.
        let stride = max(1, sample.input.count / 300)
        for index in Swift.stride(from: 0, through: sample.input.count, by: stride) {
            #expect(parse(sample.input, feeding: .split(at: index), configuration: sample.configuration) == whole)
        }
    }

    @Test(arguments: invalidSamples)
    func staysFailedAfterAnError(_ sample: InvalidSample) {
        var parser = RequestParser(configuration: sample.configuration)
        parser.append(sample.input)
        var first: ParseError?
        for _ in 0..<64 {
            do throws(ParseError) {
                _ = try parser.next()
            } catch {
                first = error
                break
            }
        }
        #expect(first == sample.error)
        parser.append("GET / HTTP/1.1\r\nHost: a\r\n\r\n".bytes)
        for _ in 0..<3 {
            #expect(throws: sample.error) { try parser.next() }
        }
    }

    @Test func tlsIsDetectedFromTheFirstByte() {
        var parser = RequestParser()
        parser.append([0x16])
        #expect(throws: ParseError.tlsHandshake) { try parser.next() }
    }

    @Test func invalidContentLengthIsReportedBeforeTheRestOfTheBodyArrives() {
        var parser = RequestParser()
        parser.append((post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n").bytes)
        #expect(throws: ParseError.contentLengthWithTransferEncoding) { try parser.next() }
    }

    @Test func errorValuesAreEscapedAndTruncated() {
        let outcome = parse(("GET /\u{1}" + String(repeating: "x", count: 200) + " HTTP/1.1\r\n\r\n").bytes)
        guard case .invalidTarget(let shown) = outcome.error else {
            Issue.record("expected invalidTarget, got \(String(describing: outcome.error))")
            return
        }
        #expect(shown.hasPrefix("/\\x01xxx"))
        #expect(shown.hasSuffix("..."))
        #expect(shown.utf8.count == 1 + 4 + 62 + 3)
    }

    @Test(arguments: invalidSamples)
    func messageIsShortAndLowercase(_ sample: InvalidSample) throws {
        let message = sample.error.description
        let first = try #require(message.first)
        #expect(first.isLowercase || first == "\"", "\(message)")
        #expect(message.utf8.count < 200)
        #expect(!message.contains("\n"))
    }
}
