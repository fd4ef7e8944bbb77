import Dispatch
import Glibc
import HTTPServer
import TestSupport
import Testing

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
        BadInput(
            "oversized head",
            "GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n",
            431
        ),
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
        #expect(try server.servesAgain())
    }

    @Test func slowHeadGets408AndIsClosed() throws {
        // 1 s, not less: the first bytes must be sent before the deadline even by a test thread held up after
        // `connect` (ThreadSanitizer on a loaded machine), or they meet a closed connection.
        let server = try TestServer(configuration: { $0.headReadTimeout = .seconds(1) })
        defer { server.stop() }
        let client = try server.connect()
        try client.send("GET /health HTTP/1.1\r\nHost: x\r\n")  // never finishes the head
        let response = try client.readResponse(timeout: .seconds(20))
        #expect(response.status == 408)
        #expect(response.text == "request head not received within 1 s\n")
        #expect(response.header("connection")?.lowercased() == "close")
        #expect(client.waitForClose())
        try server.expectHealthy()
    }

    @Test func idleKeepAliveConnectionIsClosed() throws {
        // Long enough that a test thread held up between `connect` and its request (ThreadSanitizer on a loaded
        // machine) still sends before the connection is closed as idle: a request sent after that gets a reset.
        let server = try TestServer(configuration: { $0.idleTimeout = .seconds(2) })
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/health")
        #expect(try client.readResponse().status == 200)
        #expect(client.waitForClose(timeout: .seconds(20)))
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

    // MARK: Request bodies

    /// A server whose `/upload` takes bodies of up to 10 bytes and nothing else takes any.
    private func bodyLimitedServer() throws -> TestServer {
        try TestServer(
            configuration: { configuration in
                configuration.requestBodyLimit = { head in head.path == "/upload" ? 10 : 0 }
            },
            handler: { request, responder in
                responder.respond(body: "got \(request.body.count)")
            }
        )
    }

    @Test(arguments: [
        (
            "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
            "this request takes no body, got 5 bytes"
        ),
        (
            "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 900000\r\n\r\nh",
            "this request takes no body, got 900000 bytes"
        ),
        (
            "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world",
            "request body of 11 bytes exceeds the limit of 10 bytes for this request"
        ),
        (
            "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n",
            "request body of 11 bytes exceeds the limit of 10 bytes for this request"
        ),
    ])
    func aBodyOverTheRequestsLimitIsRefusedWith413AndAClose(request: String, reason: String) throws {
        let server = try bodyLimitedServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.send(request)
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.text == reason + "\n")
        #expect(response.header("connection")?.lowercased() == "close")
        #expect(client.waitForClose())
        try server.expectHealthy()
    }

    @Test func aBodyWithinTheLimitAndRequestsWithoutOneAreServed() throws {
        let server = try bodyLimitedServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789")
        #expect(try client.readResponse().text == "got 10")
        try client.send("GET /other HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(try client.readResponse().text == "got 0")
        try client.send("GET /other HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        #expect(try client.readResponse().text == "got 0")
    }

    @Test func aClientWaitingForContinueIsRefusedBeforeItSendsTheBody() throws {
        let server = try bodyLimitedServer()
        defer { server.stop() }
        let refused = try server.connect()
        try refused.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\nExpect: 100-continue\r\n\r\n")
        let response = try refused.readResponse()
        #expect(response.status == 413)  // not 100 Continue
        #expect(refused.waitForClose())

        let invited = try server.connect()
        try invited.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        #expect(try invited.readResponse(isHead: true).status == 100)
        try invited.send("abcd")
        #expect(try invited.readResponse().text == "got 4")
    }

    @Test func aStalledBodyGets408SayingSo() throws {
        let server = try TestServer(configuration: {
            $0.idleTimeout = .seconds(1)  // not less: the request must be sent before the connection is idle that long
            $0.bodyReadTimeout = .seconds(60)
        })
        defer { server.stop() }
        let client = try server.connect()
        try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        let response = try client.readResponse(timeout: .seconds(20))
        #expect(response.status == 408)
        #expect(response.text == "request body stalled: no byte for 1 s (3 bytes arrived)\n")
        #expect(client.waitForClose())
    }

    /// Clients that send a body one byte at a time, never stalling, cannot hold the server's connections
    /// past the body deadline: each gets 408, and the server serves again.
    @Test func tricklingBodiesCannotHoldAFullServerPastTheBodyDeadline() throws {
        let connections = 100
        let server = try TestServer(configuration: {
            $0.maxConnections = connections
            $0.bodyReadTimeout = .seconds(1)
            $0.idleTimeout = .seconds(60)  // a byte arrives far more often than this: only the deadline can fire
        })
        defer { server.stop() }
        var clients: [LoopbackClient] = []
        for _ in 0..<connections {
            let client = try server.connect()
            try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
            clients.append(client)
        }
        // A byte to every socket every 20 ms, until the test ends (not a wait: load that runs beside it).
        let descriptors = clients.map(\.fd)
        let trickle = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "trickle"))
        trickle.schedule(deadline: .now(), repeating: .milliseconds(20))
        trickle.setEventHandler {
            var byte = UInt8(ascii: "x")
            for fd in descriptors { _ = Glibc.send(fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        }
        trickle.activate()
        defer { trickle.cancel() }
        for client in clients {
            let response = try client.readResponse(timeout: .seconds(15))
            #expect(response.status == 408)
            #expect(response.text.hasPrefix("request body not received within 1 s ("))
            #expect(response.header("connection")?.lowercased() == "close")
        }
        trickle.cancel()
        for client in clients { client.close() }
        #expect(try server.servesAgain())
    }
}
