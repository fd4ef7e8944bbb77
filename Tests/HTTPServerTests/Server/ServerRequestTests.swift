import EventLoops
import Foundation
import HTTPServer
import TestSupport
import Testing

@Suite(.offPool) struct ServerRequestTests {
    @Test func keepAliveServesSeveralRequestsOnOneSocket() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        for _ in 0..<5 {
            try client.sendGet("/health")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "ok")
            #expect(response.header("content-length") == "2")
            #expect(response.header("date")?.hasSuffix(" GMT") == true)
            #expect(response.header("connection") == nil)
        }
        try server.expectHealthy()
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let server = try TestServer { request, responder in
            responder.respond(body: request.path)
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.send(
            "GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /third HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        #expect(try client.readResponse().text == "/first")
        #expect(try client.readResponse().text == "/second")
        #expect(try client.readResponse().text == "/third")
        try server.expectHealthy()
    }

    @Test func pipelinedRequestsWaitForAnAsynchronousAnswer() throws {
        let server = try TestServer { request, responder in
            if request.path == "/slow" {
                responder.loop.execute { responder.respond(body: "slow") }
            } else {
                responder.respond(body: "fast")
            }
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try client.readResponse().text == "slow")
        #expect(try client.readResponse().text == "fast")
        try server.expectHealthy()
    }

    /// A client that pipelines requests for large answers and reads slowly: the server parses the next
    /// request only once the socket has taken most of the answers before it, so the answers it holds stay
    /// bounded by the kernel's socket buffers, not by how many requests the client sent (it used to answer
    /// every buffered request at once, a megabyte of buffer per 33 bytes of request).
    @Test func pipelinedRequestsWaitWhileLargeAnswersAreUnsent() throws {
        let answerBytes = 1 << 20
        let answer = [UInt8](repeating: UInt8(ascii: "a"), count: answerBytes)
        let readByClient = TestBox(0)
        let mostAhead = TestBox(0)
        let answered = TestBox(0)
        let server = try TestServer { _, responder in
            let handled = answered.update { count -> Int in
                count += 1
                return count
            }
            let ahead = handled - 1 - readByClient.value
            mostAhead.update { $0 = max($0, ahead) }
            responder.respond(headers: ["Content-Type": "application/octet-stream"], body: answer)
        }
        defer { server.stop() }
        let client = try server.connect(receiveBufferBytes: 16 * 1024)
        // At most this many answers fit in the kernel's buffers (the server's send buffer at its largest, the
        // client's fixed receive buffer) plus the connection's own backlog, and one being answered.
        let inFlight = (Self.largestSendBuffer() + Self.receiveBuffer(of: client.fd)) / answerBytes + 2
        let requests = inFlight + 8
        try client.send(String(repeating: "GET /large HTTP/1.1\r\nHost: x\r\n\r\n", count: requests))
        for _ in 0..<requests {
            let response = try client.readResponse(timeout: .seconds(20))
            #expect(response.status == 200)
            #expect(response.body.count == answerBytes)
            readByClient.update { $0 += 1 }
        }
        #expect(answered.value == requests)
        #expect(server.server._pipelineHoldCount() > 0)
        #expect(
            mostAhead.value <= inFlight,
            "the server answered \(mostAhead.value) requests ahead of the client (at most \(inFlight) fit in buffers)"
        )
        try server.expectHealthy()
    }

    /// The largest send buffer the kernel grows a TCP socket's to (`net.ipv4.tcp_wmem`'s third field), 8 MiB
    /// if unreadable.
    private static func largestSendBuffer() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/tcp_wmem", encoding: .utf8),
            let last = text.split(whereSeparator: \.isWhitespace).last, let value = Int(last)
        else { return 8 << 20 }
        return value
    }

    /// The receive buffer of socket `fd` (`SO_RCVBUF`: fixed once set, as the client's is).
    private static func receiveBuffer(of fd: Int32) -> Int {
        var bytes: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, &length) == 0 ? Int(bytes) : 8 << 20
    }

    @Test func chunkedRequestBodyIsCollected() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        )
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "hello world")
        try server.expectHealthy()
    }

    @Test func expectContinueGets100BeforeTheBodyIsSent() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        let interim = try client.readResponse()
        #expect(interim.status == 100)
        try client.send("body")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "body")
        try server.expectHealthy()
    }

    @Test func headGetsTheHeadersWithoutTheBody() throws {
        let server = try TestServer { _, responder in
            responder.respond(headers: ["Content-Type": "text/plain"], body: "twelve bytes")
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.send("HEAD /thing HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try client.readResponse(isHead: true)
        #expect(response.status == 200)
        #expect(response.header("content-length") == "12")
        // The next response on the socket must start right after the head: no body bytes were sent.
        try client.sendGet("/health")
        #expect(try client.readResponse().text == "ok")
        try server.expectHealthy()
    }

    @Test func http1_0ClosesAfterTheResponseByDefault() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.send("GET /health HTTP/1.0\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.header("connection")?.lowercased() == "close")
        #expect(client.waitForClose())
        try server.expectHealthy()
    }

    @Test func http1_0KeepAliveOnlyWhenAsked() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        for _ in 0..<2 {
            try client.send("GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.text == "ok")
            #expect(response.header("connection")?.lowercased() == "keep-alive")
        }
        try server.expectHealthy()
    }

    @Test func connectionCloseRequestIsHonoured() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/health", headers: ["Connection: close"])
        let response = try client.readResponse()
        #expect(response.header("connection")?.lowercased() == "close")
        #expect(client.waitForClose())
        try server.expectHealthy()
    }

    @Test func requestHeadersAndQueryReachTheHandler() throws {
        let server = try TestServer { request, responder in
            responder.respond(
                body:
                    "\(request.method.rawValue) \(request.path) \(request.query ?? "-") \(request.headers["x-test"] ?? "-")"
            )
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/p?a=1&b=2", headers: ["X-Test: yes"])
        #expect(try client.readResponse().text == "GET /p a=1&b=2 yes")
        try server.expectHealthy()
    }

    @Test func handlerHeadersCannotSplitTheResponseOrOverrideFraming() throws {
        let server = try TestServer { _, responder in
            responder.respond(headers: ["X-Evil": "a\r\nInjected: yes", "Content-Length": "999"], body: "abc")
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/x")
        let response = try client.readResponse()
        #expect(response.header("injected") == nil)
        #expect(response.header("content-length") == "3")
        #expect(response.text == "abc")
        try server.expectHealthy()
    }

    @Test func ipv6LoopbackListenerWorks() throws {
        let server = try TestServer(host: "::1")
        defer { server.stop() }
        try server.expectHealthy(host: "::1")
    }

    @Test func answerAfterThePeerLeftIsDropped() throws {
        let answered = TestSignal()
        let keeper = TestBox<[Responder]>([])
        let server = try TestServer { _, responder in
            keeper.update { $0.append(responder) }
            answered.signal()
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/later")
        #expect(answered.wait())
        client.close()
        // Answer from another thread, after the client left: hop onto the loop; nothing may trap.
        let done = TestSignal()
        let responder = keeper.value[0]
        responder.loop.execute {
            responder.respond(body: "too late")
            done.signal()
        }
        #expect(done.wait())
        try server.expectHealthy()
    }
}
