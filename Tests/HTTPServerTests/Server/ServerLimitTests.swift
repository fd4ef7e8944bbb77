import HTTPServer
import Testing
import TestSupport

/// One hostile or malformed input, the status it must get, and why.
struct BadInput: CustomTestStringConvertible, Sendable {
    let name: String
    let bytes: [UInt8]
    let status: Int

    init(_ name: String, _ text: String, _ status: Int) {
        self.name = name
        self.bytes = Array(text.utf8)
        self.status = status
    }

    init(_ name: String, bytes: [UInt8], _ status: Int) {
        self.name = name
        self.bytes = bytes
        self.status = status
    }

    var testDescription: String { name }

    static let all: [BadInput] = [
        BadInput("malformed request line", "GARBAGE\r\n\r\n", 400),
        BadInput("request line with too many spaces", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        BadInput("space in a header name", "GET / HTTP/1.1\r\nHost: x\r\nBad Header: v\r\n\r\n", 400),
        BadInput("header without colon", "GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400),
        BadInput(
            "smuggling: Content-Length with Transfer-Encoding",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400
        ),
        BadInput(
            "conflicting duplicate Content-Length",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
            400
        ),
        BadInput("obsolete line folding", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", 400),
        BadInput("NUL in a header value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\n\r\n", 400),
        BadInput("bare LF", "GET / HTTP/1.1\nHost: x\n\n", 400),
        BadInput("missing Host on HTTP/1.1", "GET / HTTP/1.1\r\n\r\n", 400),
        BadInput("oversized head", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n", 431),
        BadInput("oversized body", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", 413),
        BadInput("unknown transfer coding", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        BadInput("CONNECT", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 501),
        BadInput("unknown method token", "BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n", 501),
        BadInput("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
        BadInput("TLS client hello", bytes: [0x16, 0x03, 0x01, 0x00, 0xA5, 0x01, 0x00, 0x00, 0xA1, 0x03, 0x03], 400),
    ]
}

@Suite(.offPool) struct ServerLimitTests {
    @Test(arguments: BadInput.all)
    func badInputGetsItsStatusAReasonAndAClose(input: BadInput) throws {
        let server = try TestServer(configuration: { $0.parser.maxBodyBytes = 1024 })
        defer { server.stop() }
        let client = try server.connect()
        try client.send(input.bytes)
        let response = try client.readResponse()
        #expect(response.status == input.status)
        #expect(response.header("connection")?.lowercased() == "close")
        #expect(response.header("content-type")?.hasPrefix("text/plain") == true)
        #expect(!response.body.isEmpty)
        #expect(client.waitForClose())
        try server.expectHealthy()
    }

    @Test func connectionsBeyondTheLimitGet503AndAreClosed() throws {
        let server = try TestServer(configuration: { $0.maxConnections = 2 })
        defer { server.stop() }
        let first = try server.connect()
        let second = try server.connect()
        // Both are accepted and served (so the server counted them) before the third arrives.
        for client in [first, second] {
            try client.sendGet("/health")
            #expect(try client.readResponse().status == 200)
        }
        let third = try server.connect()
        let rejected = try third.readResponse()
        #expect(rejected.status == 503)
        #expect(rejected.header("connection")?.lowercased() == "close")
        #expect(third.waitForClose())
        first.close()
        second.close()
        // Slots free up once the closes are counted; a bounded retry waits for that event.
        var healthy = false
        for _ in 0..<200 where !healthy {
            let client = try server.connect()
            try client.sendGet("/health")
            healthy = (try? client.readResponse())?.status == 200
        }
        #expect(healthy)
    }

    @Test func slowHeadGets408AndIsClosed() throws {
        let server = try TestServer(configuration: { $0.headReadTimeout = .milliseconds(200) })
        defer { server.stop() }
        let client = try server.connect()
        try client.send("GET /health HTTP/1.1\r\nHost: x\r\n")  // never finishes the head
        let response = try client.readResponse(timeout: .seconds(5))
        #expect(response.status == 408)
        #expect(response.header("connection")?.lowercased() == "close")
        #expect(client.waitForClose())
        try server.expectHealthy()
    }

    @Test func idleKeepAliveConnectionIsClosed() throws {
        let server = try TestServer(configuration: { $0.idleTimeout = .milliseconds(200) })
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/health")
        #expect(try client.readResponse().status == 200)
        #expect(client.waitForClose(timeout: .seconds(5)))
        try server.expectHealthy()
    }

    @Test func garbageSplitAcrossReadsIsStillRejected() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        for byte in Array("GET / HTTP/1.1\r\nHost: x\r\nX: \u{1}\r\n\r\n".utf8) {
            try client.send([byte])
        }
        #expect(try client.readResponse().status == 400)
        try server.expectHealthy()
    }
}
